// Package node is one store box: config, Raft wiring, transport,
// forwarding to the leader, the HTTP server, leader-only workers and
// shutdown.
package node

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
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
	ID       string `toml:"id"`
	RaftAddr string `toml:"raft_addr"`
	HTTPAddr string `toml:"http_addr"`
	// HTTPSAddr is the peer's HTTPS listener (staff and kitchen), if any.
	HTTPSAddr string `toml:"https_addr,omitempty"`
	// DialAddr, when set, is where this node dials the peer's raft_addr
	// (a fault-injection proxy in tests); the cluster still knows raft_addr.
	DialAddr string `toml:"dial_addr,omitempty"`
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
	// PublicURL is the one address guests use (QR codes, guestUrl), e.g.
	// "http://order.local:8080": a name the store's router resolves to
	// every box, or a floating address. Empty: this box's own address.
	PublicURL string `toml:"public_url,omitempty"`

	HTTP      HTTPConfig      `toml:"http"`
	Staff     StaffConfig     `toml:"staff"`
	TLS       TLSConfig       `toml:"tls"`
	Raft      RaftConfig      `toml:"raft"`
	Admission AdmissionConfig `toml:"admission"`
	Firestore FirestoreConfig `toml:"firestore"`
	Retention RetentionConfig `toml:"retention"`
	Log       LogConfig       `toml:"log"`
	Shop      ShopConfig      `toml:"shop"`

	// Demo marks an in-process demo node (relaxed staff password).
	Demo bool `toml:"-"`
}

// HTTPConfig restricts the plain-HTTP listener.
type HTTPConfig struct {
	// AllowPlainStaff serves staff and kitchen pages and APIs over plain
	// HTTP too (the demo, labs). Off: plain HTTP carries the guest app and
	// guest API only, so no password, token or PIN list crosses the
	// guest Wi-Fi in clear.
	AllowPlainStaff bool `toml:"allow_plain_staff"`
}

// StaffConfig holds staff authentication settings.
type StaffConfig struct {
	// PasswordHash is the manager's password (everything).
	PasswordHash string   `toml:"password_hash"`
	TokenSecret  string   `toml:"token_secret"`
	TokenTTL     Duration `toml:"token_ttl"`
	// KitchenPasswordHash is the kitchen screens' password (kitchen role:
	// list, stream, order status, sold-out toggles); empty = no kitchen login.
	KitchenPasswordHash string   `toml:"kitchen_password_hash"`
	KitchenTokenTTL     Duration `toml:"kitchen_token_ttl"`
}

// TLSConfig names the cluster CA and this node's certificate.
type TLSConfig struct {
	CAFile   string `toml:"ca_file"`
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	// HTTPSCertFile/HTTPSKeyFile serve https_addr: a short-lived server
	// certificate (tablets refuse server certificates valid for more than
	// 825 days). Empty: cert_file and key_file.
	HTTPSCertFile string `toml:"https_cert_file"`
	HTTPSKeyFile  string `toml:"https_key_file"`
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

// AdmissionConfig holds the guest-order admission windows.
type AdmissionConfig struct {
	Cooldown        Duration `toml:"cooldown"`
	SessionBurst    Duration `toml:"session_burst"`
	InflightTTL     Duration `toml:"inflight_ttl"`
	PayloadWindow   Duration `toml:"payload_window"`
	IdempotencyTTL  Duration `toml:"idempotency_ttl"`
	CheckoutLockTTL Duration `toml:"checkout_lock_ttl"`
}

// FirestoreConfig configures cloud sync (disabled by default).
type FirestoreConfig struct {
	Enabled         bool   `toml:"enabled"`
	ProjectID       string `toml:"project_id"`
	CredentialsFile string `toml:"credentials_file"`
	EmulatorHost    string `toml:"emulator_host"`
	// MaxBackoff caps the wait between retries while the cloud is away.
	MaxBackoff Duration `toml:"max_backoff"`
}

// RetentionConfig bounds what a box keeps over years.
type RetentionConfig struct {
	AuditDays   int `toml:"audit_days"`
	ArchiveDays int `toml:"archive_days"`
}

// ShopConfig holds the shop's own settings.
type ShopConfig struct {
	// TaxRatePercent: prices are tax-inclusive; bills show the tax inside
	// them at this rate (nil: 10).
	TaxRatePercent *int `toml:"tax_rate_percent"`
}

// TaxRate is tax_rate_percent with its default.
func (s ShopConfig) TaxRate() int {
	if s.TaxRatePercent == nil {
		return 10
	}
	return *s.TaxRatePercent
}

// LogConfig selects log level and format.
type LogConfig struct {
	Level  string `toml:"level"`
	Format string `toml:"format"` // "json", "text" or "" (json unless a terminal)
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
		Raft: RaftConfig{
			HeartbeatTimeout:   Duration{300 * time.Millisecond},
			ElectionTimeout:    Duration{300 * time.Millisecond},
			LeaderLeaseTimeout: Duration{150 * time.Millisecond},
			CommitTimeout:      Duration{5 * time.Millisecond},
			SnapshotThreshold:  16384,
			SnapshotInterval:   Duration{60 * time.Second},
			TrailingLogs:       10240,
			MaxAppendEntries:   512,
		},
		Admission: AdmissionConfig{
			Cooldown:        Duration{3 * time.Second},
			SessionBurst:    Duration{1 * time.Second},
			InflightTTL:     Duration{90 * time.Second},
			PayloadWindow:   Duration{30 * time.Second},
			IdempotencyTTL:  Duration{60 * time.Minute},
			CheckoutLockTTL: Duration{15 * time.Minute},
		},
		Staff:     StaffConfig{TokenTTL: Duration{12 * time.Hour}, KitchenTokenTTL: Duration{18 * time.Hour}},
		Retention: RetentionConfig{AuditDays: 90, ArchiveDays: 400},
	}
}

// LoadConfig reads a TOML file over the defaults and validates it.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, &ConfigError{Setting: "--config", Problem: err.Error()}
	}
	return ParseConfig(raw)
}

// ParseConfig parses TOML over the defaults; unknown settings are errors.
func ParseConfig(raw []byte) (Config, error) {
	cfg := Defaults()
	dec := toml.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			return Config{}, &ConfigError{Setting: strings.Join(strict.Errors[0].Key(), "."), Problem: "unknown setting"}
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			setting := strings.Join(de.Key(), ".")
			if setting == "" { // a syntax error outside any key: say where
				row, col := de.Position()
				setting = fmt.Sprintf("(line %d, column %d)", row, col)
			}
			return Config{}, &ConfigError{Setting: setting, Problem: de.Error()}
		}
		return Config{}, &ConfigError{Setting: "(file)", Problem: err.Error()}
	}
	return cfg, cfg.Validate()
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

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
	if c.PublicURL != "" {
		if err := checkPublicURL(c.PublicURL); err != nil {
			return bad("public_url", err.Error())
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
	if !c.Demo && c.Staff.PasswordHash == "" {
		return bad("staff.password_hash", "is required (masterorder init writes one)")
	}
	if len(c.Staff.TokenSecret) < 16 {
		return bad("staff.token_secret", "must be at least 16 characters (masterorder init writes one)")
	}
	if c.Staff.TokenTTL.Duration <= 0 {
		return bad("staff.token_ttl", "must be positive")
	}
	if c.Staff.KitchenTokenTTL.Duration <= 0 {
		return bad("staff.kitchen_token_ttl", "must be positive")
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
	a := c.Admission
	for name, d := range map[string]time.Duration{
		"admission.cooldown":          a.Cooldown.Duration,
		"admission.session_burst":     a.SessionBurst.Duration,
		"admission.inflight_ttl":      a.InflightTTL.Duration,
		"admission.payload_window":    a.PayloadWindow.Duration,
		"admission.idempotency_ttl":   a.IdempotencyTTL.Duration,
		"admission.checkout_lock_ttl": a.CheckoutLockTTL.Duration,
	} {
		if d < 0 {
			return bad(name, "must not be negative")
		}
	}
	if a.IdempotencyTTL.Duration <= 0 {
		return bad("admission.idempotency_ttl", "must be positive")
	}
	if a.CheckoutLockTTL.Duration <= 0 {
		// A lock without a TTL would never lapse by itself.
		return bad("admission.checkout_lock_ttl", "must be positive")
	}
	if r := c.Shop.TaxRate(); r < 0 || r > 100 {
		return bad("shop.tax_rate_percent", "must be 0..100")
	}
	if c.Firestore.Enabled {
		if c.Firestore.ProjectID != "" && !idPattern.MatchString(c.Firestore.ProjectID) {
			return bad("firestore.project_id", "must match [A-Za-z0-9_-]{1,64} (empty: taken from the credentials file)")
		}
		if c.Firestore.EmulatorHost == "" && c.Firestore.CredentialsFile == "" {
			return bad("firestore.credentials_file", "is required when firestore.enabled (or set emulator_host)")
		}
		if c.Firestore.EmulatorHost != "" {
			if err := checkHostPort(c.Firestore.EmulatorHost); err != nil {
				return bad("firestore.emulator_host", err.Error())
			}
		}
	}
	if c.Retention.AuditDays < 0 || c.Retention.ArchiveDays < 0 {
		return bad("retention", "days must not be negative")
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

// checkPublicURL accepts http(s)://host[:port] with nothing after it (a
// trailing slash aside): the apps' paths are appended to it.
func checkPublicURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New(`must be an address like "http://order.local:8080"`)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("must be only scheme, host and port (no path, query or user)")
	}
	return nil
}
