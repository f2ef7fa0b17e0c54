package setup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"masterorder/node/atomicfile"
)

// Identity is a box's setup identity: a random id (never derived from
// hardware, so announcing it leaks nothing) and an ECDSA key with a
// self-signed certificate that serves the claim channel. A claimer trusts
// the box whose certificate has the fingerprint it saw announced.
//
// The id is not derived from the key's fingerprint (as Syncthing's device
// id is), though that would keep its form (16 hex digits): only a rule
// that every id is derived would let Find drop its impostor check (two
// keys for one id), and under that rule a box still on an older image,
// whose id is random, would no longer be listed by a newer wizard or
// console, and every box already made would change its id and short code
// once. The check costs a few lines in find.go.
type Identity struct {
	ID          string // 16 hex digits
	Cert        tls.Certificate
	Fingerprint string // hex SHA-256 of the certificate (DER)
}

// ShortCode is what the owner compares between the wizard and the box's
// sticker or screen: the id's first 4 hex digits, upper case.
func (id Identity) ShortCode() string { return ShortCode(id.ID) }

// ShortCode is the short code of a box id.
func ShortCode(boxID string) string {
	if len(boxID) < 4 {
		return strings.ToUpper(boxID)
	}
	return strings.ToUpper(boxID[:4])
}

// Files of the setup identity in the setup dir.
const (
	idFile   = "box-id"
	keyFile  = "setup-key.pem"
	certFile = "setup-cert.pem"
)

// LoadIdentity reads the box's setup identity from dir, making it on the
// first start (and after a factory reset, which removes dir).
func LoadIdentity(dir string) (Identity, error) {
	idRaw, err1 := os.ReadFile(filepath.Join(dir, idFile))
	certPEM, err2 := os.ReadFile(filepath.Join(dir, certFile))
	keyPEM, err3 := os.ReadFile(filepath.Join(dir, keyFile))
	if err := errors.Join(err1, err2, err3); err != nil {
		if !errors.Is(err1, os.ErrNotExist) && !errors.Is(err2, os.ErrNotExist) && !errors.Is(err3, os.ErrNotExist) {
			return Identity{}, fmt.Errorf("setup identity: %w", err)
		}
		return newIdentity(dir)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return newIdentity(dir) // torn by a power cut: a fresh one is harmless before any claim
	}
	id := strings.TrimSpace(string(idRaw))
	if len(id) != 16 {
		return newIdentity(dir)
	}
	return Identity{ID: id, Cert: cert, Fingerprint: Fingerprint(cert.Certificate[0])}, nil
}

// Fingerprint is the hex SHA-256 of a DER certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

func newIdentity(dir string) (Identity, error) {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Identity{}, err
	}
	id := hex.EncodeToString(raw[:])
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Identity{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return Identity{}, err
	}
	// Boxes boot with wrong clocks: the certificate is valid from 2000 to
	// 2100, and the claimer checks its fingerprint, not its dates.
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "masterorder-setup-" + id},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"masterorder-setup-" + id},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Identity{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Identity{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return Identity{}, err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{keyFile, keyPEM, 0o600}, {certFile, certPEM, 0o644}, {idFile, []byte(id + "\n"), 0o644}} {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return Identity{}, err
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Cert: cert, Fingerprint: Fingerprint(der)}, nil
}
