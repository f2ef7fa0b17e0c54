package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"masterorder/node/pki"
)

func httpsCertOf(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A new store's boxes serve staff HTTPS for the store's name; a store
// made before (an HTTPS certificate for the box's address and public_url
// only, the CA key on the box) gets the name at its next start, keeping
// every name and address it had; once done, nothing is issued again.
func TestHTTPSCertificatesNameTheStore(t *testing.T) {
	c, err := New("ramen")
	if err != nil {
		t.Fatal(err)
	}
	c.MDNSName = "ramen.local"
	self := Box{ID: "a", Host: "192.168.1.20", HTTPPort: "80", RaftPort: "7000", HTTPSPort: "443"}
	b, err := c.Bundle(self, c.Peers([]Box{self}), false, true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.WriteTLS(dir); err != nil {
		t.Fatal(err)
	}
	tlsFiles := TLSFiles(dir, "a", true)
	cert := httpsCertOf(t, tlsFiles.HTTPSCertFile)
	for _, h := range []string{"ramen.local", "192.168.1.20", "localhost"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("a new box's HTTPS certificate: %v", err)
		}
	}

	// A store made before: the certificate has no mDNS name.
	old, key, err := c.CA.IssueHTTPS("a", []string{"192.168.1.20", "localhost", "127.0.0.1", "shop.lan"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteHTTPSFiles(dir, "a", old, key); err != nil {
		t.Fatal(err)
	}
	did, err := EnsureHTTPSNames("a", "masterorder.local", tlsFiles)
	if err != nil || !did {
		t.Fatalf("EnsureHTTPSNames = %v, %v; want a new certificate", did, err)
	}
	cert = httpsCertOf(t, tlsFiles.HTTPSCertFile)
	for _, h := range []string{"masterorder.local", "192.168.1.20", "shop.lan", "localhost", "127.0.0.1"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("after the upgrade: %v", err)
		}
	}
	if _, err := tls.LoadX509KeyPair(tlsFiles.HTTPSCertFile, tlsFiles.HTTPSKeyFile); err != nil {
		t.Fatalf("the new certificate and key are not a pair: %v", err)
	}
	if did, err := EnsureHTTPSNames("a", "masterorder.local", tlsFiles); err != nil || did {
		t.Fatalf("second EnsureHTTPSNames = %v, %v; want nothing to do", did, err)
	}

	// Without the CA key on the box: left as it is, no error.
	if err := pki.WriteHTTPSFiles(dir, "a", old, key); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "ca-key.pem"))
	if did, err := EnsureHTTPSNames("a", "masterorder.local", tlsFiles); err != nil || did {
		t.Fatalf("without the CA key: %v, %v", did, err)
	}
}
