package cloudsync

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	vkit "cloud.google.com/go/firestore/apiv1"
)

// Config is the [firestore] section of a node's config plus tuning knobs.
// Zero tuning values take the defaults below.
type Config struct {
	Enabled         bool   // [firestore] enabled
	ProjectID       string // [firestore] project_id; defaults to the key file's project_id (or "demo-masterorder" with an emulator)
	CredentialsFile string // [firestore] credentials_file: a service account key (JSON)
	EmulatorHost    string // [firestore] emulator_host: "host:port"; when set, no credentials are used
	ShopID          string // shop_id: documents go to shops/{ShopID}/orders/{orderId}

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

// serviceAccountFile is the part of a service account key file we check.
type serviceAccountFile struct {
	Type        string `json:"type"`
	ProjectID   string `json:"project_id"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
}

// loadCredentials reads and checks a service account key file. It does no
// network I/O: tokens are fetched on the first call to Firestore.
func loadCredentials(path string) (*auth.Credentials, string, error) {
	if path == "" {
		return nil, "", errors.New("cloudsync: [firestore] credentials_file is required when enabled without emulator_host")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file: %w", err)
	}
	var f serviceAccountFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file %s is not a JSON key file: %v", path, err)
	}
	if f.Type != "service_account" {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file %s has type %q, want a service account key (\"type\": \"service_account\")", path, f.Type)
	}
	if f.ClientEmail == "" || f.PrivateKey == "" {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file %s lacks client_email or private_key", path)
	}
	if err := checkPrivateKey(f.PrivateKey); err != nil {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file %s: private_key: %v", path, err)
	}
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, b, &credentials.DetectOptions{
		Scopes: vkit.DefaultAuthScopes(),
	})
	if err != nil {
		return nil, "", fmt.Errorf("cloudsync: [firestore] credentials_file %s: %v", path, err)
	}
	return creds, f.ProjectID, nil
}

func checkPrivateKey(s string) error {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return errors.New("not PEM encoded")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	return errors.New("not a PKCS#8 or PKCS#1 private key")
}
