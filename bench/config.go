// Package bench is the lunch-peak load generator behind `masterorder bench`.
//
// It sets up its own menu items and table sessions through the staff API,
// lets many guests order through the guest API the way order-sdk.js does
// (one Idempotency-Key per intended order, reused for every retry; failover
// to another node; waiting out cooldowns; reconciling a 409 by polling the
// order history), injects client faults (double taps, a second tap with a
// new key, lost responses), and finally reads every session back from every
// node to prove that no intended order reached the kitchen twice and that no
// acknowledged order is missing anywhere.
package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxIntendedPerSession bounds the intended orders placed in one table
// session. The guest order history returns at most 200 orders per call and
// cannot paginate, so verification needs every session to stay below that
// (with room for the duplicates it is looking for). Use more tables for more
// orders.
const MaxIntendedPerSession = 150

// historyLimit is the largest page the guest order history returns.
const historyLimit = 200

// Config is one bench run.
type Config struct {
	// URLs are the nodes' base URLs (http://host:port). Setup uses the
	// first one that answers; guests are spread round-robin over all.
	URLs []string
	// Tables is the number of table sessions opened; GuestsPerTable guests
	// share each one; each guest places OrdersPerGuest intended orders
	// (0 = until Duration is over).
	Tables, GuestsPerTable, OrdersPerGuest int
	// Duration stops guests from starting new intended orders once it has
	// passed since the order phase began (0 = no limit). Orders already
	// under way are finished.
	Duration time.Duration
	// Fault probabilities per intended order, each in [0,1]: DoubleTap sends
	// the same request (same key) twice concurrently; KeyChange adds a
	// concurrent tap with a new key and the same cart; LostResponse drops
	// the response of the first attempt and resends with the same key.
	DoubleTap, KeyChange, LostResponse float64
	// StaffPassword logs in to the staff API for setup.
	StaffPassword string
	// Concurrency bounds the guests running at once (0 = all of them,
	// Tables*GuestsPerTable).
	Concurrency int
	// Progress receives a live progress line (refreshed with '\r') every
	// second; nil = none.
	Progress io.Writer
	// Seed drives carts and fault choices (0 = pick one; the report shows
	// it). Idempotency keys and client ids are always random.
	Seed int64
	// RequestTimeout bounds one HTTP request (0 = 10 s).
	RequestTimeout time.Duration

	// ClosedLoop selects the throughput measurement (closedloop.go):
	// Concurrency callers for Warmup + Duration over Sessions sessions,
	// against URLs or, when there are none, three nodes the bench starts
	// itself (Binary, default this executable; files in DataDir, default
	// a temporary directory). CPUProfileDir, when set, receives each
	// node's CPU profile of the measured window.
	// Orders, when above 0, ends the closed loop once that many new orders
	// were answered in all (the warm-up's included); Duration may then be
	// 0 (no time limit) or a cap. The report gives each node's RSS then.
	// LeaderOnly sends every closed-loop order to the Raft leader (and
	// follows it when it changes), as guests' phones reach the store by
	// its LAN name, which only the leader answers (leader.go); without
	// it the orders are spread round robin over URLs.
	ClosedLoop    bool
	LeaderOnly    bool
	Orders        int
	Sessions      int
	Warmup        time.Duration
	CPUProfileDir string
	DataDir       string
	Binary        string

	// Transport, when set, wraps the transport of the client every request
	// of the run goes through: tests check each exchange against the
	// contract with it (api/apitest).
	Transport func(http.RoundTripper) http.RoundTripper

	// Tests shorten these (0 = the defaults below).
	verifySettle    time.Duration
	replicationWait time.Duration
	leaderRecheck   time.Duration
}

const (
	// defaultVerifySettle is how long verification keeps re-reading while
	// an acknowledged order is missing somewhere or a node cannot be read
	// (a follower a moment behind, a node restarting).
	defaultVerifySettle = 8 * time.Second
	// defaultReplicationWait bounds the wait after setup until every node
	// serves the run's menu and sessions.
	defaultReplicationWait = 15 * time.Second
)

// DefaultConfig is what `masterorder bench --url URL` runs.
func DefaultConfig() Config {
	return Config{
		Tables:         16,
		GuestsPerTable: 4,
		OrdersPerGuest: 5,
		DoubleTap:      0.1,
		KeyChange:      0.1,
		LostResponse:   0.1,
		StaffPassword:  "demo",
		RequestTimeout: 10 * time.Second,
	}
}

// ConfigError is a bad setting; its message names the flag.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// urlList collects --url values; each may hold several comma-separated URLs.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, ",") }

func (l *urlList) Set(v string) error {
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*l = append(*l, u)
		}
	}
	return nil
}

// ParseFlags parses the arguments after `masterorder bench`. Flag syntax
// errors are reported on stderr by the flag package (with the usage) and
// returned; a bad value is returned as a *ConfigError naming the flag, not
// printed. -h/--help returns flag.ErrHelp. The progress line goes to stderr
// unless --no-progress. jsonPath is the --json file ("" = none).
func ParseFlags(args []string, stderr io.Writer) (cfg Config, jsonPath string, err error) {
	cfg = DefaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: masterorder bench --url URL[,URL...] [flags]")
		fmt.Fprintln(fs.Output(), "Lunch-peak load against a running cluster: orders/s, latency, replays, duplicates (must be 0), lost (must be 0).")
		fmt.Fprintln(fs.Output(), "       masterorder bench --closed-loop --concurrency N (--duration D | --orders N) [--leader-only] [--url URL[,URL...]] [flags]")
		fmt.Fprintln(fs.Output(), "Throughput: N callers back to back, a fresh phone and key per order; without --url on 3 nodes it starts itself.")
		fs.PrintDefaults()
	}
	var urls urlList
	fs.Var(&urls, "url", "node base URL(s), comma-separated or repeated (setup uses the first)")
	fs.IntVar(&cfg.Tables, "tables", cfg.Tables, "table sessions to open (throughput scales with tables: one order per second per session)")
	fs.IntVar(&cfg.GuestsPerTable, "guests-per-table", cfg.GuestsPerTable, "guests (client ids) per table")
	fs.IntVar(&cfg.OrdersPerGuest, "orders-per-guest", cfg.OrdersPerGuest, "intended orders per guest (0 = until --duration)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "stop starting new orders after this long (0 = no limit)")
	fs.Float64Var(&cfg.DoubleTap, "double-tap", cfg.DoubleTap, "probability that an order is sent twice concurrently with the same key")
	fs.Float64Var(&cfg.KeyChange, "key-change", cfg.KeyChange, "probability of a concurrent second tap with a new key and the same cart")
	fs.Float64Var(&cfg.LostResponse, "lost-response", cfg.LostResponse, "probability that the first response is dropped and the order resent")
	fs.StringVar(&cfg.StaffPassword, "staff-password", cfg.StaffPassword, "staff password for setup")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "guests running at once (0 = tables × guests-per-table)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed for carts and faults (0 = random)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "timeout of one HTTP request")
	fs.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file")
	noProgress := fs.Bool("no-progress", false, "no live progress line on stderr")
	fs.BoolVar(&cfg.ClosedLoop, "closed-loop", false, "throughput: --concurrency callers each sending the next order as soon as the last is answered, a fresh client id and key per order (without --url: starts 3 local nodes)")
	fs.BoolVar(&cfg.LeaderOnly, "leader-only", false, "closed loop: send every order to the Raft leader (found from each node's /api/cluster/status, followed when it changes), as phones reach the store by its name, which only the leader answers; default: spread round robin over the nodes")
	fs.IntVar(&cfg.Orders, "orders", 0, "closed loop: end once this many new orders were answered in all, warm-up included (--duration then optional); the report gives each node's RSS after them")
	fs.IntVar(&cfg.Sessions, "sessions", defaultClosedLoopSessions, "closed loop: table sessions the orders go round (enough that the 1 s burst window never binds)")
	fs.DurationVar(&cfg.Warmup, "warmup", defaultWarmup, "closed loop: orders answered in this first stretch are not counted")
	fs.StringVar(&cfg.CPUProfileDir, "cpuprofile", "", "closed loop: write each node's CPU profile of the measured window into this directory")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "closed loop without --url: the local nodes' files (default a temporary directory, removed afterwards)")
	// Positional arguments are more URLs; flags may follow them.
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return Config{}, "", err
		}
		if fs.NArg() == 0 {
			break
		}
		_ = urls.Set(fs.Arg(0))
		rest = fs.Args()[1:]
	}
	cfg.URLs = urls
	if !*noProgress {
		cfg.Progress = stderr
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, "", err
	}
	return cfg, jsonPath, nil
}

// Validate checks the settings and normalizes the URLs (no trailing slash).
// Its errors are *ConfigError.
func (c *Config) Validate() error {
	if c.ClosedLoop {
		if err := c.validateClosedLoop(); err != nil {
			return err
		}
	}
	if c.LeaderOnly && !c.ClosedLoop {
		return configErrorf("--leader-only is for the closed loop (--closed-loop)")
	}
	if len(c.URLs) == 0 && !c.ClosedLoop {
		return configErrorf("--url: at least one node URL is required")
	}
	for i, raw := range c.URLs {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return configErrorf("--url: %q is not an http(s)://host:port URL", raw)
		}
		c.URLs[i] = strings.TrimRight(u.String(), "/")
	}
	if c.Tables < 1 {
		return configErrorf("--tables must be at least 1 (got %d)", c.Tables)
	}
	if c.GuestsPerTable < 1 {
		return configErrorf("--guests-per-table must be at least 1 (got %d)", c.GuestsPerTable)
	}
	if c.OrdersPerGuest < 0 {
		return configErrorf("--orders-per-guest must not be negative (got %d)", c.OrdersPerGuest)
	}
	if c.Duration < 0 {
		return configErrorf("--duration must not be negative (got %s)", c.Duration)
	}
	if c.OrdersPerGuest == 0 && c.Duration == 0 && !c.ClosedLoop {
		return configErrorf("--orders-per-guest 0 (unlimited) needs a --duration")
	}
	if c.OrdersPerGuest > 0 && c.GuestsPerTable*c.OrdersPerGuest > MaxIntendedPerSession {
		return configErrorf("--guests-per-table × --orders-per-guest = %d orders per table session, more than %d: the order history returns at most %d per session and cannot paginate, so verification could not see them all; use more --tables",
			c.GuestsPerTable*c.OrdersPerGuest, MaxIntendedPerSession, historyLimit)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"--double-tap", c.DoubleTap}, {"--key-change", c.KeyChange}, {"--lost-response", c.LostResponse}} {
		if !(p.v >= 0 && p.v <= 1) {
			return configErrorf("%s is a probability between 0 and 1 (got %v)", p.name, p.v)
		}
	}
	if c.StaffPassword == "" {
		return configErrorf("--staff-password must not be empty")
	}
	if c.Concurrency < 0 {
		return configErrorf("--concurrency must not be negative (got %d)", c.Concurrency)
	}
	if c.RequestTimeout < 0 {
		return configErrorf("--request-timeout must not be negative (got %s)", c.RequestTimeout)
	}
	return nil
}

// isConfigError reports whether err is a bad setting (exit 2).
func isConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

// validateClosedLoop checks the closed-loop settings. Without URLs it
// returns nil only for a run that starts its own nodes (RunClosedLoop
// validates again once they are up).
func (c *Config) validateClosedLoop() error {
	if c.Orders < 0 {
		return configErrorf("--orders must not be negative (got %d)", c.Orders)
	}
	if c.Duration <= 0 && c.Orders == 0 {
		return configErrorf("--closed-loop needs a --duration or --orders (got %s)", c.Duration)
	}
	if c.CPUProfileDir != "" && c.Duration <= 0 {
		return configErrorf("--cpuprofile needs a --duration (the profile's length)")
	}
	if c.Concurrency < 1 {
		return configErrorf("--closed-loop needs --concurrency of at least 1 (got %d)", c.Concurrency)
	}
	if c.Sessions < 1 {
		return configErrorf("--sessions must be at least 1 (got %d)", c.Sessions)
	}
	if c.Warmup < 0 {
		return configErrorf("--warmup must not be negative (got %s)", c.Warmup)
	}
	if c.DataDir != "" && len(c.URLs) > 0 {
		return configErrorf("--data-dir is for the nodes the closed loop starts itself, not with --url")
	}
	return nil
}
