package cloudsync

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"
)

// Config is the [firestore] section of a node's config plus tuning knobs.
// Zero tuning values take the defaults below.
type Config struct {
	Enabled         bool   // [firestore] enabled
	ProjectID       string // [firestore] project_id; defaults to the key file's project_id (or "demo-masterorder" with an emulator)
	CredentialsFile string // [firestore] credentials_file: a service account key (JSON)
	// Key is a service account key file's bytes (set from the Cloud page);
	// when set, CredentialsFile is not read. With EmulatorHost too, the
	// key's own tokens go to the emulator, which judges them by its rules.
	Key          []byte
	EmulatorHost string // [firestore] emulator_host: "host:port"; without Key, the emulator's owner token is used
	ShopID       string // shop_id: documents go to shops/{ShopID}/orders/{orderId}

	BatchSize     int           // changes per push (default 200, at most 500)
	MinBackoff    time.Duration // first retry delay cap after a failure (default 200ms)
	MaxBackoff    time.Duration // retry delay cap (default 30s)
	CallTimeout   time.Duration // per Firestore push and per MarkSynced call (default 15s)
	ProbeInterval time.Duration // when idle, how often reachability is checked with one read (default 60s; negative: never)
}

// Defaults for the tuning knobs.
const (
	DefaultBatchSize     = 200
	MaxBatchSize         = 500
	DefaultMinBackoff    = 200 * time.Millisecond
	DefaultMaxBackoff    = 30 * time.Second
	DefaultCallTimeout   = 15 * time.Second
	DefaultProbeInterval = 60 * time.Second

	// EmulatorProjectID is used with an emulator when project_id is empty.
	EmulatorProjectID = "demo-masterorder"
)

var shopIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// withDefaults fills zero knobs and checks the settings. Errors name the
// setting at fault.
func (c Config) withDefaults() (Config, error) {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if !c.Enabled {
		return c, nil
	}
	switch {
	case !shopIDPattern.MatchString(c.ShopID):
		return c, fmt.Errorf("cloudsync: shop_id %q must be 1-64 characters of A-Z a-z 0-9 _ -", c.ShopID)
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return c, fmt.Errorf("cloudsync: batch size %d must be between 1 and %d", c.BatchSize, MaxBatchSize)
	case c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff:
		return c, fmt.Errorf("cloudsync: backoff %v..%v is not a valid range", c.MinBackoff, c.MaxBackoff)
	case c.CallTimeout < 0:
		return c, fmt.Errorf("cloudsync: call timeout %v must be positive", c.CallTimeout)
	}
	if c.EmulatorHost != "" {
		h := strings.TrimPrefix(strings.TrimPrefix(c.EmulatorHost, "http://"), "https://")
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return c, fmt.Errorf("cloudsync: [firestore] emulator_host %q must be host:port", c.EmulatorHost)
		}
		c.EmulatorHost = h
	}
	return c, nil
}

// loadKeyFile reads and checks a service account key file ([firestore]
// credentials_file). It does no network I/O.
func loadKeyFile(path string) (Key, error) {
	if path == "" {
		return Key{}, errors.New("cloudsync: [firestore] credentials_file is required when enabled without emulator_host")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("cloudsync: [firestore] credentials_file: %w", err)
	}
	k, err := ParseKey(b, false)
	var ke *KeyError
	switch {
	case err == nil:
		return k, nil
	case errors.As(err, &ke) && ke.Problem == KeyNotJSON:
		return Key{}, fmt.Errorf("cloudsync: [firestore] credentials_file %s is not a JSON key file", path)
	case errors.As(err, &ke) && ke.Problem == KeyNotServiceAccount:
		return Key{}, fmt.Errorf("cloudsync: [firestore] credentials_file %s has %s", path, ke.Detail)
	default:
		return Key{}, fmt.Errorf("cloudsync: [firestore] credentials_file %s %v", path, err)
	}
}
