// Package pki creates and loads the cluster's own certificate authority and
// the node certificates it signs, and builds the mutual-TLS configurations
// that Raft and the internal forwarding channel use.
//
// The boxes share a Wi-Fi with guests, so every node-to-node connection is
// mutual TLS: a peer must present a certificate signed by the cluster CA
// that `masterorder init` created. Nothing else is trusted — not the system
// roots, not another cluster's CA.
//
// # Clocks and validity
//
// The boxes have no real-time clock and often boot offline, so their wall
// clock can be anything from the Unix epoch to whatever a stale
// fake-hwclock file says. Certificates are therefore issued with:
//
//   - NotBefore fixed at 2020-01-01T00:00:00Z (ValidityStart), well before
//     any box could have been set up, so a clock that lags behind the day of
//     `init` does not make fresh certificates "not yet valid";
//   - NotAfter = max(now, ValidityStart) + validFor, with validFor defaulting
//     to 30 years (DefaultValidity), so a store never meets a sudden
//     expiry; rotating means running `init` again. Node certificates
//     never outlive the CA, so they end with it.
//
// Staff HTTPS certificates are the exception (IssueHTTPS): 800 days from
// the issuing box's clock, because tablets refuse longer ones; a box that
// holds the CA key renews its own (node/certrenew).
//
// A clock that reads earlier than ValidityStart has never been set (the
// software did not exist then). The TLS configurations built here judge
// certificates on CertClock, which treats such a clock as ValidityStart
// instead of refusing every peer until NTP arrives. Expiry is still checked
// against any plausible clock.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// ValidityStart is the NotBefore of every certificate issued here.
var ValidityStart = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

// DefaultValidity is used when a validity of zero is asked for.
const DefaultValidity = 30 * 365 * 24 * time.Hour

// CA is the cluster certificate authority: its certificate and private key.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// NewCA creates a self-signed ECDSA P-256 CA. A validFor of zero means
// DefaultValidity.
func NewCA(commonName string, validFor time.Duration) (*CA, error) {
	if strings.TrimSpace(commonName) == "" {
		return nil, errors.New("pki: CA common name is empty")
	}
	if validFor < 0 {
		return nil, errors.New("pki: negative validity")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"MasterOrder cluster"}},
		NotBefore:             ValidityStart,
		NotAfter:              notAfter(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true, // node certificates only, no intermediates
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
	}, nil
}

// LoadCA loads a CA from PEM, checking that the certificate is a CA and
// that the key belongs to it.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("pki: CA certificate is not a certificate authority")
	}
	signer, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	key, ok := signer.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("pki: CA key is not an ECDSA key")
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("pki: CA key does not match the CA certificate")
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: bytes.Clone(certPEM),
		keyPEM:  bytes.Clone(keyPEM),
	}, nil
}

// CertPEM returns the CA certificate in PEM form (public; every node gets it).
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// KeyPEM returns the CA private key in PEM form (secret; only needed to
// issue node certificates, e.g. when a box is replaced).
func (ca *CA) KeyPEM() []byte { return bytes.Clone(ca.keyPEM) }

// Certificate returns the parsed CA certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// IssueNode issues a certificate for one node, usable both as a TLS server
// and as a TLS client (serverAuth and clientAuth). Its subject common name
// is nodeID; its SANs are the hosts (IP addresses or DNS names) plus nodeID
// as a DNS name. A validFor of zero means DefaultValidity; the certificate
// never outlives the CA.
func (ca *CA) IssueNode(nodeID string, hosts []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	if validFor < 0 {
		return nil, nil, errors.New("pki: negative validity")
	}
	return ca.issue(nodeID, hosts, ValidityStart, notAfter(validFor), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
}

// HTTPSValidity is how long an HTTPS server certificate lasts: iOS and
// iPadOS refuse TLS server certificates valid for more than 825 days, even
// under a CA the user installed.
const HTTPSValidity = 800 * 24 * time.Hour

// IssueHTTPS issues the server certificate a box shows staff tablets on
// its HTTPS port: serverAuth only, valid from a day before now (judged by
// the tablet's clock, which is right) for HTTPSValidity, never beyond the
// CA. A box that holds the CA key renews its own before it lapses
// (node/certrenew); `masterorder init --renew-https` renews them for boxes
// that do not.
func (ca *CA) IssueHTTPS(nodeID string, hosts []string) (certPEM, keyPEM []byte, err error) {
	return ca.IssueHTTPSAt(nodeID, hosts, time.Now())
}

// IssueHTTPSAt is IssueHTTPS with now given: the renewer passes its clock.
func (ca *CA) IssueHTTPSAt(nodeID string, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	start := now.UTC().Add(-24 * time.Hour).Truncate(time.Second)
	return ca.issue(nodeID, hosts, start, start.Add(HTTPSValidity), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
}

// ReissueHTTPS issues cur, an HTTPS certificate of this CA, again for
// other hosts with the same validity (cur's NotBefore and NotAfter): a
// box whose address changed names its new one without reading its own
// clock, which may not be set yet.
func (ca *CA) ReissueHTTPS(nodeID string, hosts []string, cur *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	return ca.issue(nodeID, hosts, cur.NotBefore, cur.NotAfter, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
}

// Hosts is the host list that names the same hosts as cert when issued
// again for nodeID (its DNS names and IP addresses; nodeID itself is
// added by the issuer): how a certificate is renewed for the names it has.
func Hosts(cert *x509.Certificate) []string {
	var hosts []string
	for _, d := range cert.DNSNames {
		if d != cert.Subject.CommonName {
			hosts = append(hosts, d)
		}
	}
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

func (ca *CA) issue(nodeID string, hosts []string, start, end time.Time, usages []x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	if err := ValidateNodeID(nodeID); err != nil {
		return nil, nil, err
	}
	var ips []net.IP
	dnsNames := []string{nodeID}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if strings.ContainsAny(h, " :/\\@") {
			return nil, nil, fmt.Errorf("pki: host %q is neither an IP address nor a DNS name", h)
		}
		if h != nodeID {
			dnsNames = append(dnsNames, h)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate node key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	if end.After(ca.cert.NotAfter) {
		end = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeID, Organization: []string{"MasterOrder cluster"}},
		NotBefore:    start,
		NotAfter:     end,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: create node certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// ValidateNodeID accepts node ids usable in file names and as a DNS label:
// 1–64 characters of [A-Za-z0-9_-].
func ValidateNodeID(id string) error {
	if len(id) == 0 || len(id) > 64 {
		return fmt.Errorf("pki: node id %q must be 1-64 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("pki: node id %q may contain only letters, digits, '-' and '_'", id)
		}
	}
	return nil
}

// CertClock is the clock certificates are judged on: the wall clock, except
// that a clock reading earlier than ValidityStart — one that was never set —
// counts as ValidityStart.
func CertClock() time.Time {
	now := time.Now()
	if now.Before(ValidityStart) {
		return ValidityStart
	}
	return now
}

func notAfter(validFor time.Duration) time.Time {
	if validFor == 0 {
		validFor = DefaultValidity
	}
	start := time.Now().UTC()
	if start.Before(ValidityStart) {
		start = ValidityStart
	}
	return start.Add(validFor).Truncate(time.Second)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // positive, never zero
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCertPEM returns the first CERTIFICATE block.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	certs, err := parseCertsPEM(data)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	return certs, nil
}

func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM private key block found")
		}
		switch block.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, errors.New("unsupported private key type")
			}
			return s, nil
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		}
	}
}
