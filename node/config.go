// Package node is one store box: config, Raft wiring, transport,
// forwarding to the leader, the HTTP server, leader-only workers and
// shutdown.
package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node/lanname"
)

// Duration is a time.Duration written as a Go duration string in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses "3s", "90s", "60m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText writes the Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Peer is one member of the initial cluster.
type Peer struct {
	ID       string `toml:"id" json:"id"`
	RaftAddr string `toml:"raft_addr" json:"raft_addr"`
	HTTPAddr string `toml:"http_addr" json:"http_addr"`
	// HTTPSAddr is the peer's HTTPS listener (staff and kitchen), if any.
	HTTPSAddr string `toml:"https_addr,omitempty" json:"https_addr,omitempty"`
	// DialAddr, when set, is where this node dials the peer's raft_addr
	// (a fault-injection proxy in tests); the cluster still knows raft_addr.
	DialAddr string `toml:"dial_addr,omitempty" json:"dial_addr,omitempty"`
}

// Config is one node's whole configuration (see config.example.toml).
type Config struct {
	NodeID        string `toml:"node_id"`
	ShopID        string `toml:"shop_id"`
	DataDir       string `toml:"data_dir"`
	HTTPAddr      string `toml:"http_addr"`
	RaftAddr      string `toml:"raft_addr"`
	ClusterSecret string `toml:"cluster_secret"`
	Peers         []Peer `toml:"peers"`
	// Join: this node joins an existing cluster (a replacement or an extra
	// box) and never bootstraps one; peers lists the existing members and
	// need not list this node. A leader adds it with the membership call.
	Join bool `toml:"join"`
	// HTTPSAddr serves staff and kitchen (and everything else) over TLS
	// with this box's certificate from the cluster CA; empty = none.
	HTTPSAddr string `toml:"https_addr"`
	// MDNSName is the store's one name for guests, answered on the LAN by
	// multicast DNS by one member at a time (node/lanname); empty = none.
	MDNSName string `toml:"mdns_name"`

	HTTP HTTPConfig `toml:"http"`
	TLS  TLSConfig  `toml:"tls"`
	Raft RaftConfig `toml:"raft"`
	Log  LogConfig  `toml:"log"`
	Disk DiskConfig `toml:"disk"`
	// Update is [update]: new versions from the console (package update).
	Update UpdateConfig `toml:"update"`
}

// HTTPConfig restricts the plain-HTTP listener.
type HTTPConfig struct {
	// AllowPlainStaff serves staff and kitchen pages and APIs over plain
	// HTTP too (the demo, labs). Off: plain HTTP carries the guest app and
	// guest API only, so no password, token or PIN list crosses the
	// guest Wi-Fi in clear.
	AllowPlainStaff bool `toml:"allow_plain_staff"`
}

// TLSConfig names the cluster CA and this node's certificate.
type TLSConfig struct {
	CAFile   string `toml:"ca_file" json:"ca_file"`
	CertFile string `toml:"cert_file" json:"cert_file"`
	KeyFile  string `toml:"key_file" json:"key_file"`
	// HTTPSCertFile/HTTPSKeyFile serve https_addr: a short-lived server
	// certificate (tablets refuse server certificates valid for more than
	// 825 days). Empty: cert_file and key_file.
	HTTPSCertFile string `toml:"https_cert_file" json:"https_cert_file"`
	HTTPSKeyFile  string `toml:"https_key_file" json:"https_key_file"`
}

// Enabled reports whether mutual TLS is configured.
func (t TLSConfig) Enabled() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// RaftConfig tunes consensus for a store LAN.
type RaftConfig struct {
	HeartbeatTimeout   Duration `toml:"heartbeat_timeout"`
	ElectionTimeout    Duration `toml:"election_timeout"`
	LeaderLeaseTimeout Duration `toml:"leader_lease_timeout"`
	CommitTimeout      Duration `toml:"commit_timeout"`
	SnapshotThreshold  uint64   `toml:"snapshot_threshold"`
	SnapshotInterval   Duration `toml:"snapshot_interval"`
	TrailingLogs       uint64   `toml:"trailing_logs"`
	MaxAppendEntries   int      `toml:"max_append_entries"`
}

// LogConfig selects log level and format.
type LogConfig struct {
	Level  string `toml:"level"`
	Format string `toml:"format"` // "json", "text" or "" (json unless a terminal)
}

// DiskConfig is [disk]: the floors of free space on the data directory's
// file system. Each floor is the smaller of its share of the file system
// and its size.
type DiskConfig struct {
	LowFloorPercent  float64 `toml:"low_floor_percent"`
	LowFloorMB       int64   `toml:"low_floor_mb"`
	HardFloorPercent float64 `toml:"hard_floor_percent"`
	HardFloorMB      int64   `toml:"hard_floor_mb"`
	// SlowWrite: a Raft log write (bbolt commit and fsync) slower than
	// this marks the card slow for a minute.
	SlowWrite Duration `toml:"slow_write"`
	// ReadOnlyExitAfter: how long the box waits out a read-only card
	// before it exits to its unit (0: never).
	ReadOnlyExitAfter Duration `toml:"readonly_exit_after"`
}

func defaultDisk() DiskConfig {
	return DiskConfig{LowFloorPercent: 10, LowFloorMB: 200, HardFloorPercent: 2, HardFloorMB: 64,
		SlowWrite: Duration{500 * time.Millisecond}, ReadOnlyExitAfter: Duration{2 * time.Minute}}
}

func (d DiskConfig) validate() error {
	bad := func(setting, problem string) error { return &ConfigError{Setting: "disk." + setting, Problem: problem} }
	if d.LowFloorPercent < 0 || d.LowFloorPercent > 50 || d.HardFloorPercent < 0 || d.HardFloorPercent > d.LowFloorPercent {
		return bad("hard_floor_percent", "floors are 0..50 %, the hard one not above the low one")
	}
	if d.LowFloorMB < 0 || d.HardFloorMB < 0 || d.HardFloorMB > d.LowFloorMB {
		return bad("hard_floor_mb", "floors are sizes ≥ 0, the hard one not above the low one")
	}
	if d.SlowWrite.Duration <= 0 {
		return bad("slow_write", "must be positive")
	}
	if d.ReadOnlyExitAfter.Duration < 0 {
		return bad("readonly_exit_after", "must be 0 (never) or positive")
	}
	return nil
}

// ConfigError names the setting that is wrong; the CLI exits 2 on it.
type ConfigError struct {
	Setting string
	Problem string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config: %s: %s", e.Setting, e.Problem) }

// Defaults returns a Config with every default filled in.
func Defaults() Config {
	return Config{
		ShopID: "shop",
		Disk:   defaultDisk(),
		Update: defaultUpdate(),
		// Raft timing for a Raspberry Pi, from measurements (issue 36,
		// docs/performance.md "Raft timing at a Pi's speed"): three
		// processes each capped to 25 % of a core, every card slow (20 ms
		// fsyncs, 2 % stalling 500 ms), under a lunch peak, a hostile phone
		// and backups, 10 minutes a run, on a busy shared 2-core host.
		// 300/300/150 ms raised the term 3, 8 and 35 times in three runs
		// (5 leader changes in the last): followers that missed heartbeats
		// for 300-600 ms, split votes, leaders that lost their quorum for
		// one 150 ms lease and stepped down; each election fails the
		// writes in flight. 600/600/300 ms (three runs) and 1 s/1 s/500 ms
		// (hashicorp/raft's own) raised it never. A dead leader is noticed after one to two
		// heartbeat timeouts, so failover grows with them: the first order
		// through a survivor came 1.7-3.4 s after a SIGKILL or a power cut
		// of the leader at 600 ms on that host, 2.8-4.0 s at 1 s (1.1-3.4 s
		// at 300 ms). 600 ms is the shortest timing measured without an
		// election; the lease stays half the heartbeat timeout.
		Raft: RaftConfig{
			HeartbeatTimeout:   Duration{600 * time.Millisecond},
			ElectionTimeout:    Duration{600 * time.Millisecond},
			LeaderLeaseTimeout: Duration{300 * time.Millisecond},
			CommitTimeout:      Duration{5 * time.Millisecond},
			SnapshotThreshold:  16384,
			SnapshotInterval:   Duration{60 * time.Second},
			TrailingLogs:       10240,
			MaxAppendEntries:   512,
		},
	}
}

// ReadConfigFile reads a config file; a file that cannot be read is a
// ConfigError naming --config.
func ReadConfigFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Setting: "--config", Problem: err.Error()}
	}
	return raw, nil
}

// DecodeConfig decodes TOML into v (already holding its defaults);
// unknown settings are errors. The domain decodes the same file into a
// struct that embeds Config, so both parts are read in one pass.
func DecodeConfig(raw []byte, v any) error {
	dec := toml.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			return &ConfigError{Setting: strings.Join(strict.Errors[0].Key(), "."), Problem: "unknown setting"}
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			setting := strings.Join(de.Key(), ".")
			if setting == "" { // a syntax error outside any key: say where
				row, col := de.Position()
				setting = fmt.Sprintf("(line %d, column %d)", row, col)
			}
			return &ConfigError{Setting: setting, Problem: de.Error()}
		}
		return &ConfigError{Setting: "(file)", Problem: err.Error()}
	}
	return nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID reports whether s is a valid id (node, shop, peer, project):
// [A-Za-z0-9_-]{1,64}.
func ValidID(s string) bool { return idPattern.MatchString(s) }

// Validate checks every setting and names the first bad one.
func (c *Config) Validate() error {
	bad := func(setting, problem string) error { return &ConfigError{Setting: setting, Problem: problem} }
	if !idPattern.MatchString(c.NodeID) {
		return bad("node_id", "must match [A-Za-z0-9_-]{1,64}")
	}
	if !idPattern.MatchString(c.ShopID) {
		return bad("shop_id", "must match [A-Za-z0-9_-]{1,64}")
	}
	if c.DataDir == "" {
		return bad("data_dir", "is required")
	}
	if err := checkHostPort(c.HTTPAddr); err != nil {
		return bad("http_addr", err.Error())
	}
	if err := checkHostPort(c.RaftAddr); err != nil {
		return bad("raft_addr", err.Error())
	}
	if c.HTTPSAddr != "" {
		if err := checkHostPort(c.HTTPSAddr); err != nil {
			return bad("https_addr", err.Error())
		}
		if c.HTTPSAddr == c.HTTPAddr || c.HTTPSAddr == c.RaftAddr {
			return bad("https_addr", "must be a port of its own")
		}
	}
	if c.MDNSName != "" {
		if err := lanname.CheckName(c.MDNSName); err != nil {
			return bad("mdns_name", err.Error())
		}
	}
	if len(c.ClusterSecret) < 16 {
		return bad("cluster_secret", "must be at least 16 characters (masterorder init writes one)")
	}
	if placeholderSecret(c.ClusterSecret) {
		return bad("cluster_secret", "is the example's placeholder: every copy of config.example.toml knows it (masterorder init writes a random one)")
	}
	if len(c.Peers) == 0 {
		return bad("peers", "list every member, this node included")
	}
	seen := map[string]bool{}
	self := false
	for i, p := range c.Peers {
		key := fmt.Sprintf("peers[%d]", i)
		if !idPattern.MatchString(p.ID) {
			return bad(key+".id", "must match [A-Za-z0-9_-]{1,64}")
		}
		if seen[p.ID] {
			return bad(key+".id", "duplicate peer id "+p.ID)
		}
		seen[p.ID] = true
		if err := checkHostPort(p.RaftAddr); err != nil {
			return bad(key+".raft_addr", err.Error())
		}
		if err := checkHostPort(p.HTTPAddr); err != nil {
			return bad(key+".http_addr", err.Error())
		}
		if p.ID == c.NodeID {
			self = true
			if p.RaftAddr != c.RaftAddr {
				return bad(key+".raft_addr", "differs from raft_addr of this node")
			}
		}
	}
	if !self && !c.Join {
		return bad("peers", "does not list this node ("+c.NodeID+"); set join = true for a node that joins an existing cluster")
	}
	// The raft port also carries forwarded writes: without mutual TLS any
	// phone on the Wi-Fi could speak Raft to it. There is no plaintext mode.
	if !c.TLS.Enabled() {
		return bad("tls", "is required: the cluster port runs mutual TLS only (masterorder init writes ca_file, cert_file and key_file)")
	}
	if c.TLS.CAFile == "" || c.TLS.CertFile == "" || c.TLS.KeyFile == "" {
		return bad("tls", "ca_file, cert_file and key_file go together")
	}
	if (c.TLS.HTTPSCertFile == "") != (c.TLS.HTTPSKeyFile == "") {
		return bad("tls.https_cert_file", "https_cert_file and https_key_file go together")
	}
	r := c.Raft
	for name, d := range map[string]time.Duration{
		"raft.heartbeat_timeout":    r.HeartbeatTimeout.Duration,
		"raft.election_timeout":     r.ElectionTimeout.Duration,
		"raft.leader_lease_timeout": r.LeaderLeaseTimeout.Duration,
		"raft.commit_timeout":       r.CommitTimeout.Duration,
		"raft.snapshot_interval":    r.SnapshotInterval.Duration,
	} {
		if d <= 0 {
			return bad(name, "must be positive")
		}
	}
	if r.LeaderLeaseTimeout.Duration > r.HeartbeatTimeout.Duration {
		return bad("raft.leader_lease_timeout", "must not exceed raft.heartbeat_timeout")
	}
	if r.MaxAppendEntries < 1 || r.MaxAppendEntries > 1024 {
		return bad("raft.max_append_entries", "must be 1..1024")
	}
	if err := c.Disk.validate(); err != nil {
		return err
	}
	if err := c.Update.validate(); err != nil {
		return err
	}
	switch c.Log.Level {
	case "", "debug", "info", "warn", "error":
	default:
		return bad("log.level", "must be debug, info, warn or error")
	}
	switch c.Log.Format {
	case "", "json", "text":
	default:
		return bad("log.format", "must be json or text")
	}
	return nil
}

// placeholderSecret reports a secret copied from documentation rather than
// generated: the example's text, or anything that says "change me".
func placeholderSecret(s string) bool {
	l := strings.ToLower(s)
	for _, p := range []string{"change-me", "changeme", "change_me", "placeholder", "example"} {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// CheckHostPort checks a HOST:PORT setting (the domain's settings too).
func CheckHostPort(s string) error { return checkHostPort(s) }

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT", s)
	}
	_ = host
	if port == "" || port == "0" {
		return fmt.Errorf("%q needs a port", s)
	}
	return nil
}

// PeerHTTP returns the HTTP address of a member by id, if known.
func (c *Config) PeerHTTP(id string) string {
	for _, p := range c.Peers {
		if p.ID == id {
			return p.HTTPAddr
		}
	}
	return ""
}
