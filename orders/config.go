package orders

import (
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"masterorder/node"
)

// Config is the domain's part of a box's config file: staff logins, the
// admission windows, cloud sync, retention and the shop's own settings.
// It is decoded from the same TOML file as node.Config (see FileConfig).
type Config struct {
	// PublicURL is the one address guests use (QR codes, guestUrl), e.g.
	// "http://order.local:8080": a name the store's router resolves to
	// every box, or a floating address. Empty: this box's own address.
	PublicURL string `toml:"public_url,omitempty"`

	Staff     StaffConfig     `toml:"staff"`
	Admission AdmissionConfig `toml:"admission"`
	Firestore FirestoreConfig `toml:"firestore"`
	Retention RetentionConfig `toml:"retention"`
	Shop      ShopConfig      `toml:"shop"`

	// Demo marks an in-process demo node (relaxed staff password).
	Demo bool `toml:"-"`
}

// NodeConfig names node.Config inside FileConfig (an embedded field takes
// its type's name, and both parts are called Config).
type NodeConfig = node.Config

// FileConfig is one box's whole config file: the node's settings and the
// domain's, side by side at the top level (go-toml flattens embedded
// structs, and Go promotes their fields: c.RaftAddr, c.Staff).
type FileConfig struct {
	NodeConfig
	Config
}

// StaffConfig holds staff authentication settings.
type StaffConfig struct {
	// PasswordHash is the manager's password (everything).
	PasswordHash string        `toml:"password_hash"`
	TokenSecret  string        `toml:"token_secret"`
	TokenTTL     node.Duration `toml:"token_ttl"`
	// KitchenPasswordHash is the kitchen screens' password (kitchen role:
	// list, stream, order status, sold-out toggles); empty = no kitchen login.
	KitchenPasswordHash string        `toml:"kitchen_password_hash"`
	KitchenTokenTTL     node.Duration `toml:"kitchen_token_ttl"`
}

// AdmissionConfig holds the guest-order admission windows.
type AdmissionConfig struct {
	Cooldown        node.Duration `toml:"cooldown"`
	SessionBurst    node.Duration `toml:"session_burst"`
	InflightTTL     node.Duration `toml:"inflight_ttl"`
	PayloadWindow   node.Duration `toml:"payload_window"`
	IdempotencyTTL  node.Duration `toml:"idempotency_ttl"`
	CheckoutLockTTL node.Duration `toml:"checkout_lock_ttl"`
}

// FirestoreConfig configures cloud sync from the file (disabled by
// default; the Cloud page switches it on without the file). Enabled here
// wins over the Cloud page on this box.
type FirestoreConfig struct {
	Enabled         bool   `toml:"enabled"`
	ProjectID       string `toml:"project_id"`
	CredentialsFile string `toml:"credentials_file"`
	// EmulatorHost sends the sync to an emulator instead of Firestore:
	// the file's sync as the emulator's owner, the Cloud page's with its
	// key's own tokens (tests, development). Set even when not enabled.
	EmulatorHost string `toml:"emulator_host"`
	// MaxBackoff caps the wait between retries while the cloud is away.
	MaxBackoff node.Duration `toml:"max_backoff"`
}

// RetentionConfig bounds what a box keeps over years.
type RetentionConfig struct {
	AuditDays   int `toml:"audit_days"`
	ArchiveDays int `toml:"archive_days"`
}

// ShopConfig holds the shop's own settings.
type ShopConfig struct {
	// Name is the shop's name as the owner wrote it in the setup wizard,
	// shown on the staff screen's and the guests' headers ("" : none).
	Name string `toml:"name"`
	// TaxRatePercent: prices are tax-inclusive; bills show the tax inside
	// them at this rate (nil: 10).
	TaxRatePercent *int `toml:"tax_rate_percent"`
	// TimeZone is the store's time zone, an IANA name ("Asia/Tokyo"):
	// receipts, tickets, reports, day labels and the screens' times use
	// it. The wizard writes the owner's choice into every box; the
	// console's setting, replicated, wins over it (timezone.go). Empty:
	// the box's own zone.
	TimeZone string `toml:"time_zone,omitempty"`
}

// TaxRate is tax_rate_percent with its default.
func (s ShopConfig) TaxRate() int {
	if s.TaxRatePercent == nil {
		return 10
	}
	return *s.TaxRatePercent
}

// Defaults returns a Config with every default filled in.
func Defaults() Config {
	return Config{
		Admission: AdmissionConfig{
			Cooldown:        node.Duration{Duration: 3 * time.Second},
			SessionBurst:    node.Duration{Duration: 1 * time.Second},
			InflightTTL:     node.Duration{Duration: 90 * time.Second},
			PayloadWindow:   node.Duration{Duration: 30 * time.Second},
			IdempotencyTTL:  node.Duration{Duration: 60 * time.Minute},
			CheckoutLockTTL: node.Duration{Duration: 15 * time.Minute},
		},
		Staff:     StaffConfig{TokenTTL: node.Duration{Duration: 12 * time.Hour}, KitchenTokenTTL: node.Duration{Duration: 18 * time.Hour}},
		Retention: RetentionConfig{AuditDays: 90, ArchiveDays: 400},
	}
}

// FileDefaults is both parts' defaults.
func FileDefaults() FileConfig { return FileConfig{node.Defaults(), Defaults()} }

// LoadConfig reads a box's config file over the defaults and validates it.
func LoadConfig(path string) (FileConfig, error) {
	raw, err := node.ReadConfigFile(path)
	if err != nil {
		return FileConfig{}, err
	}
	return ParseConfig(raw)
}

// ParseConfig parses a whole config file over the defaults; unknown
// settings are errors.
func ParseConfig(raw []byte) (FileConfig, error) {
	cfg := FileDefaults()
	if err := node.DecodeConfig(raw, &cfg); err != nil {
		return FileConfig{}, err
	}
	return cfg, cfg.Validate()
}

// Validate checks both parts and names the first bad setting.
func (c *FileConfig) Validate() error {
	if err := c.NodeConfig.Validate(); err != nil {
		return err
	}
	return c.Config.Validate()
}

// Validate checks the domain's settings and names the first bad one.
func (c *Config) Validate() error {
	bad := func(setting, problem string) error { return &node.ConfigError{Setting: setting, Problem: problem} }
	if c.PublicURL != "" {
		if err := checkPublicURL(c.PublicURL); err != nil {
			return bad("public_url", err.Error())
		}
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
	a := c.Admission
	for _, w := range []struct {
		name string
		d    time.Duration
	}{
		{"admission.cooldown", a.Cooldown.Duration},
		{"admission.session_burst", a.SessionBurst.Duration},
		{"admission.inflight_ttl", a.InflightTTL.Duration},
		{"admission.payload_window", a.PayloadWindow.Duration},
		{"admission.idempotency_ttl", a.IdempotencyTTL.Duration},
		{"admission.checkout_lock_ttl", a.CheckoutLockTTL.Duration},
	} {
		if w.d < 0 {
			return bad(w.name, "must not be negative")
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
	if utf8.RuneCountInString(c.Shop.Name) > 100 || strings.ContainsFunc(c.Shop.Name, unicode.IsControl) {
		return bad("shop.name", "must be at most 100 characters, without control characters")
	}
	if c.Shop.TimeZone != "" {
		if _, err := LoadZone(c.Shop.TimeZone); err != nil {
			return bad("shop.time_zone", err.Error())
		}
	}
	if c.Firestore.Enabled {
		if c.Firestore.ProjectID != "" && !node.ValidID(c.Firestore.ProjectID) {
			return bad("firestore.project_id", "must match [A-Za-z0-9_-]{1,64} (empty: taken from the credentials file)")
		}
		if c.Firestore.EmulatorHost == "" && c.Firestore.CredentialsFile == "" {
			return bad("firestore.credentials_file", "is required when firestore.enabled (or set emulator_host)")
		}
	}
	if c.Firestore.EmulatorHost != "" {
		// Also where a key from the Cloud page goes (tests, development).
		if err := node.CheckHostPort(c.Firestore.EmulatorHost); err != nil {
			return bad("firestore.emulator_host", err.Error())
		}
	}
	if c.Retention.AuditDays < 0 || c.Retention.ArchiveDays < 0 {
		return bad("retention", "days must not be negative")
	}
	return nil
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
