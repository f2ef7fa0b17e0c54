// Package cluster makes a store cluster: the cluster CA, each box's
// certificates, the shared secrets, the password hashes (under init's
// strength rule) and each box's config file. It is the one way to make a
// cluster: `masterorder init` writes its output to a directory, the setup
// wizard pushes each box its Bundle over the pinned claim channel, and the
// console's add/replace path (AddBox) writes a joining box's Bundle.
package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/crypto/bcrypt"

	"masterorder/node"
	"masterorder/node/atomicfile"
	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/orders/staffauth"
)

// Peer is a box as a cluster's config lists it: node's own type, named
// here so that package setup, which runs before there is a node, needs
// no import of node (only this writer knows node's and orders' types).
type Peer = node.Peer

// Box is one box of the cluster as its peers reach it.
type Box struct {
	ID        string
	Host      string // an address or name the other boxes and tablets reach
	HTTPPort  string
	RaftPort  string
	HTTPSPort string // "" when the cluster serves no HTTPS (labs only)
}

// Peer is how the cluster's config lists b.
func (b Box) Peer() node.Peer {
	p := node.Peer{ID: b.ID, HTTPAddr: net.JoinHostPort(b.Host, b.HTTPPort), RaftAddr: net.JoinHostPort(b.Host, b.RaftPort)}
	if b.HTTPSPort != "" {
		p.HTTPSAddr = net.JoinHostPort(b.Host, b.HTTPSPort)
	}
	return p
}

// Config is what a box's config file holds when init or setup writes it:
// the settings a box needs; commented defaults for the rest live in
// config.example.toml.
type Config struct {
	NodeID        string      `toml:"node_id" json:"node_id"`
	ShopID        string      `toml:"shop_id" json:"shop_id"`
	DataDir       string      `toml:"data_dir" json:"data_dir"`
	HTTPAddr      string      `toml:"http_addr" json:"http_addr"`
	RaftAddr      string      `toml:"raft_addr" json:"raft_addr"`
	ClusterSecret string      `toml:"cluster_secret" json:"cluster_secret"`
	Join          bool        `toml:"join,omitempty" json:"join,omitempty"`
	HTTPSAddr     string      `toml:"https_addr,omitempty" json:"https_addr,omitempty"`
	PublicURL     string      `toml:"public_url,omitempty" json:"public_url,omitempty"`
	MDNSName      string      `toml:"mdns_name,omitempty" json:"mdns_name,omitempty"`
	Peers         []node.Peer `toml:"peers" json:"peers"`
	HTTP          struct {
		AllowPlainStaff bool `toml:"allow_plain_staff" json:"allow_plain_staff"`
	} `toml:"http" json:"http"`
	Staff struct {
		PasswordHash        string `toml:"password_hash" json:"password_hash"`
		TokenSecret         string `toml:"token_secret" json:"token_secret"`
		KitchenPasswordHash string `toml:"kitchen_password_hash" json:"kitchen_password_hash"`
	} `toml:"staff" json:"staff"`
	Shop struct {
		Name           string `toml:"name,omitempty" json:"name,omitempty"`
		TaxRatePercent *int   `toml:"tax_rate_percent,omitempty" json:"tax_rate_percent,omitempty"`
		TimeZone       string `toml:"time_zone,omitempty" json:"time_zone,omitempty"`
	} `toml:"shop" json:"shop"`
	TLS node.TLSConfig `toml:"tls" json:"tls"`
}

// UseLayout points the config at a box's directories: its TLS files in
// tlsDir (named as pki names them) and its data in dataDir.
func (c *Config) UseLayout(tlsDir, dataDir string) {
	c.DataDir = dataDir
	c.TLS = TLSFiles(tlsDir, c.NodeID, c.HTTPSAddr != "")
}

// Marshal renders the config file with a header comment and checks that it
// loads, so nothing ever writes an unusable config.
func (c Config) Marshal(header string) ([]byte, error) {
	b, err := toml.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := append([]byte(header), b...)
	if _, err := orders.ParseConfig(out); err != nil {
		return nil, fmt.Errorf("config for %s does not load: %w", c.NodeID, err)
	}
	return out, nil
}

// ParseConfig reads a config Marshal wrote (strictly: unknown settings are
// errors, as for any box config).
func ParseConfig(raw []byte) (Config, error) {
	if _, err := orders.ParseConfig(raw); err != nil {
		return Config{}, err
	}
	var c Config
	if err := toml.Unmarshal(raw, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// TLSFiles names a box's files in tlsDir; the HTTPS pair only when it
// serves HTTPS.
func TLSFiles(tlsDir, id string, https bool) node.TLSConfig {
	t := node.TLSConfig{CAFile: pki.CAFile(tlsDir), CertFile: pki.NodeCertFile(tlsDir, id), KeyFile: pki.NodeKeyFile(tlsDir, id)}
	if https {
		t.HTTPSCertFile, t.HTTPSKeyFile = pki.HTTPSCertFile(tlsDir, id), pki.HTTPSKeyFile(tlsDir, id)
	}
	return t
}

// WeakPasswordError is a password the strength rule refuses.
type WeakPasswordError struct{ Problem string }

func (e *WeakPasswordError) Error() string {
	return e.Problem + " (a guest on the Wi-Fi would guess it)"
}

// CheckPassword applies init's strength rule.
func CheckPassword(pw string) error {
	if err := staffauth.CheckStrength(pw); err != nil {
		return &WeakPasswordError{Problem: strings.TrimPrefix(err.Error(), "staffauth: ")}
	}
	return nil
}

// ErrSamePasswords: a kitchen login would be a manager login.
var ErrSamePasswords = errors.New("the kitchen password must differ from the manager password (a kitchen login would be a manager login)")

// Password hashes pw after the strength check, or makes a random one when
// pw is empty (generated reports it, for the caller to show once).
func Password(pw string) (hash, plain string, generated bool, err error) {
	if pw == "" {
		pw, generated = staffauth.NewSecret()[:16], true
	} else if err := CheckPassword(pw); err != nil {
		return "", "", false, err
	}
	hash, err = staffauth.HashPassword(pw)
	if err != nil {
		return "", "", false, err
	}
	return hash, pw, generated, nil
}

// Costs of a password hash made elsewhere (the setup page) that a cluster
// takes: no cheaper than init's own hashes, and no dearer than a box can
// check at every staff login (cost 12 is ~4 times init's work).
const (
	MinHashCost = bcrypt.DefaultCost
	MaxHashCost = 12
)

// bcryptHashPattern is a bcrypt hash as Go's bcrypt and the setup page
// write it: version, two-digit cost, 22 characters of salt and 31 of hash
// in bcrypt's base64.
var bcryptHashPattern = regexp.MustCompile(`^\$2[ab]\$[0-9]{2}\$[./A-Za-z0-9]{53}$`)

// ErrBadPasswordHash: not a bcrypt hash a box can check logins with.
var ErrBadPasswordHash = fmt.Errorf("a password hash must be a bcrypt hash ($2a$ or $2b$) of cost %d to %d", MinHashCost, MaxHashCost)

// CheckPasswordHash accepts a well-formed bcrypt hash of cost MinHashCost
// to MaxHashCost: what the setup wizard receives instead of a password.
func CheckPasswordHash(hash string) error {
	if !bcryptHashPattern.MatchString(hash) {
		return ErrBadPasswordHash
	}
	cost, err := bcrypt.Cost([]byte(hash))
	if err != nil || cost < MinHashCost || cost > MaxHashCost {
		return ErrBadPasswordHash
	}
	return nil
}

// Cluster is a cluster's shared material: its CA (with the key, to issue
// box certificates), secrets and settings every box shares.
type Cluster struct {
	CA                  *pki.CA
	ShopID              string
	ClusterSecret       string
	TokenSecret         string
	StaffPasswordHash   string
	KitchenPasswordHash string
	PublicURL           string
	MDNSName            string // the name the members answer by mDNS (node/lanname)
	PlainHTTP           bool   // labs only: no HTTPS listener, staff over HTTP
	TaxRatePercent      *int
	ShopName            string // as the owner wrote it: the headers show it
	TimeZone            string // the store's time zone ([shop] time_zone; "": none)
}

// New makes a fresh cluster CA and secrets for shopID; the caller fills
// in the password hashes (Password) and settings.
func New(shopID string) (*Cluster, error) {
	if !node.ValidID(shopID) {
		return nil, fmt.Errorf("shop id %q: use letters, digits, - and _", shopID)
	}
	ca, err := pki.NewCA("MasterOrder "+shopID, 0)
	if err != nil {
		return nil, fmt.Errorf("create cluster CA: %w", err)
	}
	return &Cluster{CA: ca, ShopID: shopID, ClusterSecret: staffauth.NewSecret(), TokenSecret: staffauth.NewSecret()}, nil
}

// FromMember is the cluster a member's own config and CA describe: what
// adding a box to a running cluster needs.
func FromMember(cfg orders.FileConfig, ca *pki.CA) *Cluster {
	c := &Cluster{CA: ca, ShopID: cfg.ShopID, ClusterSecret: cfg.ClusterSecret, TokenSecret: cfg.Staff.TokenSecret,
		StaffPasswordHash: cfg.Staff.PasswordHash, KitchenPasswordHash: cfg.Staff.KitchenPasswordHash,
		PublicURL: cfg.PublicURL, MDNSName: cfg.MDNSName, PlainHTTP: cfg.HTTPSAddr == "", TaxRatePercent: cfg.Shop.TaxRatePercent, ShopName: cfg.Shop.Name,
		TimeZone: cfg.Shop.TimeZone}
	return c
}

// Bundle is everything one box needs: its config (paths not yet set: the
// box applies its own layout with UseLayout) and its TLS files by base
// name in the TLS directory, as pki names them (pki.CAFile("") and its
// siblings; the CA key only when the box may issue certificates).
type Bundle struct {
	Config Config
	Files  map[string][]byte
}

// Bundle makes box self's bundle for a cluster of peers. join: self joins
// a running cluster (a leader adds it) instead of bootstrapping with peers.
// withCAKey puts the CA key on the box, so a manager can add or replace a
// box from the console of any member.
func (c *Cluster) Bundle(self Box, peers []node.Peer, join, withCAKey bool) (Bundle, error) {
	if err := pki.ValidateNodeID(self.ID); err != nil {
		return Bundle{}, err
	}
	files, err := c.issue(self)
	if err != nil {
		return Bundle{}, err
	}
	files[pki.CAFile("")] = c.CA.CertPEM()
	if withCAKey {
		files[pki.CAKeyFile("")] = c.CA.KeyPEM()
	}
	return Bundle{Config: c.config(self, peers, join), Files: files}, nil
}

// config is box self's config in a cluster of peers (paths not yet set).
func (c *Cluster) config(self Box, peers []node.Peer, join bool) Config {
	p := self.Peer()
	if c.PlainHTTP {
		p.HTTPSAddr = ""
	}
	cfg := Config{NodeID: self.ID, ShopID: c.ShopID, HTTPAddr: p.HTTPAddr, RaftAddr: p.RaftAddr, HTTPSAddr: p.HTTPSAddr,
		PublicURL: c.PublicURL, MDNSName: c.MDNSName, ClusterSecret: c.ClusterSecret, Join: join, Peers: peers}
	cfg.HTTP.AllowPlainStaff = c.PlainHTTP
	cfg.Staff.PasswordHash, cfg.Staff.TokenSecret, cfg.Staff.KitchenPasswordHash = c.StaffPasswordHash, c.TokenSecret, c.KitchenPasswordHash
	cfg.Shop.TaxRatePercent, cfg.Shop.Name, cfg.Shop.TimeZone = c.TaxRatePercent, c.ShopName, c.TimeZone
	return cfg
}

// ConfigError is a setting a box's config check refuses, by its name in
// the config file (node's type).
type ConfigError = node.ConfigError

// Check runs the boxes' own config check (orders.ParseConfig, which a box
// runs on the config pushed to it) over the cluster's settings, on a
// config made for a sample box: the wizard calls it before it claims any
// box, so that what every box would refuse is refused first, by one rule.
// A refusal is a *ConfigError naming the setting.
func (c *Cluster) Check() error {
	self := Box{ID: "a", Host: "192.0.2.1", HTTPPort: "8080", RaftPort: "9080", HTTPSPort: "8443"} // TEST-NET-1: never dialled
	cfg := c.config(self, c.Peers([]Box{self}), false)
	cfg.UseLayout("/etc/masterorder/tls", "/var/lib/masterorder")
	_, err := cfg.Marshal("")
	return err
}

// Peers lists boxes as a cluster config does.
func (c *Cluster) Peers(boxes []Box) []node.Peer {
	var out []node.Peer
	for _, b := range boxes {
		p := b.Peer()
		if c.PlainHTTP {
			p.HTTPSAddr = ""
		}
		out = append(out, p)
	}
	return out
}

// AddBox is init --add-node's bundle: box self joins the running cluster
// whose members are current (self must be new to it).
func (c *Cluster) AddBox(self Box, current []node.Peer, withCAKey bool) (Bundle, error) {
	var peers []node.Peer
	for _, p := range current {
		if p.ID == self.ID {
			return Bundle{}, fmt.Errorf("%s is already in the cluster; pick a new id for a new box", self.ID)
		}
		p.DialAddr = ""
		peers = append(peers, p)
	}
	peers = append(peers, c.Peers([]Box{self})...)
	return c.Bundle(self, peers, true, withCAKey)
}

// issue makes a box's cluster certificate and, unless the cluster is plain
// HTTP, its HTTPS certificate (HTTPSHosts). The cluster certificate is
// bound to the box's id (its common name, which peers check: never its
// address); the host it carries is only what it was set up at.
func (c *Cluster) issue(b Box) (map[string][]byte, error) {
	cert, key, err := c.CA.IssueNode(b.ID, []string{b.Host}, 0)
	if err != nil {
		return nil, fmt.Errorf("issue certificate for %s: %w", b.ID, err)
	}
	files := map[string][]byte{pki.NodeCertFile("", b.ID): cert, pki.NodeKeyFile("", b.ID): key}
	if c.PlainHTTP {
		return files, nil
	}
	cert, key, err = IssueHTTPS(c.CA, b.ID, b.Host, c.PublicURL, c.MDNSName)
	if err != nil {
		return nil, err
	}
	files[pki.HTTPSCertFile("", b.ID)], files[pki.HTTPSKeyFile("", b.ID)] = cert, key
	return files, nil
}

// HTTPSHosts are the names a box's HTTPS certificate is valid for: the
// store's mDNS name (mdns_name, e.g. masterorder.local: the staff and
// kitchen address the done page, the setup sheet and the console give,
// which survives a new router and a dead box), public_url's host (a
// store that prefers its router's DNS), the host the box was set up at
// (tablets that saved an address keep working while the lease holds),
// localhost and 127.0.0.1.
func HTTPSHosts(host, publicURL, mdnsName string) []string {
	hosts := []string{host, "localhost", "127.0.0.1"}
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	if mdnsName != "" {
		hosts = append(hosts, strings.TrimSuffix(strings.ToLower(mdnsName), "."))
	}
	return hosts
}

// IssueHTTPS issues a box's HTTPS certificate for HTTPSHosts (names: the
// store's mDNS name, none or one). Renewals call it with the member's
// own settings: https_addr's host, public_url and mdns_name.
func IssueHTTPS(ca *pki.CA, id, host, publicURL string, names ...string) (cert, key []byte, err error) {
	hosts := HTTPSHosts(host, publicURL, "")
	for _, n := range names {
		if n != "" {
			hosts = append(hosts, strings.TrimSuffix(strings.ToLower(n), "."))
		}
	}
	cert, key, err = ca.IssueHTTPS(id, hosts)
	if err != nil {
		return nil, nil, fmt.Errorf("issue HTTPS certificate for %s: %w", id, err)
	}
	return cert, key, nil
}

// EnsureHTTPSNames is the upgrade of a store made before staff screens
// went by the store's name: when the box's HTTPS certificate does not
// name mdns_name and the cluster CA's key is on the box (the wizard puts
// it on every member), it issues the certificate again with the same
// hosts and addresses plus the name, and reports true. A box without the
// CA key, or whose certificate names it already, is left as it is.
func EnsureHTTPSNames(id, mdnsName string, t node.TLSConfig) (bool, error) {
	if mdnsName == "" || t.HTTPSCertFile == "" || t.CAFile == "" {
		return false, nil
	}
	dir := filepath.Dir(t.CAFile)
	if t.HTTPSCertFile != pki.HTTPSCertFile(dir, id) || t.HTTPSKeyFile != pki.HTTPSKeyFile(dir, id) {
		return false, nil // files of the operator's own naming: theirs to renew
	}
	raw, err := os.ReadFile(t.HTTPSCertFile)
	if err != nil {
		return false, fmt.Errorf("read HTTPS certificate: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return false, fmt.Errorf("HTTPS certificate %s: no PEM block", t.HTTPSCertFile)
	}
	old, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false, fmt.Errorf("HTTPS certificate %s: %w", t.HTTPSCertFile, err)
	}
	name := strings.TrimSuffix(strings.ToLower(mdnsName), ".")
	if old.VerifyHostname(name) == nil {
		return false, nil
	}
	if _, err := os.Stat(pki.CAKeyFile(dir)); err != nil {
		return false, nil // no CA key on this box: init --renew-https does it
	}
	ca, err := pki.LoadCAFiles(dir)
	if err != nil {
		return false, err
	}
	hosts := append([]string{}, old.DNSNames...)
	for _, ip := range old.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	cert, key, err := ca.IssueHTTPS(id, append(hosts, name))
	if err != nil {
		return false, fmt.Errorf("issue HTTPS certificate for %s: %w", id, err)
	}
	if err := pki.WriteHTTPSFiles(dir, id, cert, key); err != nil {
		return false, err
	}
	return true, nil
}

// WriteTLS writes a bundle's TLS files into tlsDir (pki.WriteFile: keys
// 0600, the rest 0644, the directory pki.DirMode), refusing any name that
// is not a plain TLS file name.
func (b Bundle) WriteTLS(tlsDir string) error {
	for name, data := range b.Files {
		if err := pki.WriteFile(tlsDir, name, data); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	return nil
}

// WriteFile writes a box's config (or another small file) atomically and
// durably with node/atomicfile, the one writer of a box's files (kept for
// init's callers; setup calls atomicfile itself).
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return atomicfile.WriteFile(path, data, mode)
}
