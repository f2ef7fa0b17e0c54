package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mustCA(t *testing.T, name string) *CA {
	t.Helper()
	ca, err := NewCA(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustNode(t *testing.T, ca *CA, id string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := ca.IssueNode(id, hosts, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func mustMTLS(t *testing.T, ca *CA, id string) (server, client *tls.Config) {
	t.Helper()
	c, k := mustNode(t, ca, id, "127.0.0.1")
	s, cl, err := MutualTLSConfig(ca.CertPEM(), c, k)
	if err != nil {
		t.Fatal(err)
	}
	return s, cl
}

func TestIssueNodeCertificateShape(t *testing.T) {
	ca := mustCA(t, "test cluster")
	certPEM, keyPEM := mustNode(t, ca, "a", "192.168.1.10", "box-a.local", "[fe80::1]")
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "a" {
		t.Errorf("CN = %q", cert.Subject.CommonName)
	}
	if !slices.Equal(cert.DNSNames, []string{"a", "box-a.local"}) {
		t.Errorf("DNSNames = %v", cert.DNSNames)
	}
	if len(cert.IPAddresses) != 2 || !cert.IPAddresses[0].Equal(net.ParseIP("192.168.1.10")) || !cert.IPAddresses[1].Equal(net.ParseIP("fe80::1")) {
		t.Errorf("IPAddresses = %v", cert.IPAddresses)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("ExtKeyUsage = %v", cert.ExtKeyUsage)
	}
	if cert.IsCA {
		t.Error("node certificate must not be a CA")
	}
	if !cert.NotBefore.Equal(ValidityStart) {
		t.Errorf("NotBefore = %v, want %v", cert.NotBefore, ValidityStart)
	}
	if min := time.Now().Add(DefaultValidity - 48*time.Hour); cert.NotAfter.Before(min) {
		t.Errorf("NotAfter = %v, want about 30 years from now", cert.NotAfter)
	}
	if cert.NotAfter.After(ca.Certificate().NotAfter) {
		t.Error("node certificate outlives the CA")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("node cert does not verify under its CA: %v", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("key does not match cert: %v", err)
	}
	// A clock that was never set (1970) still accepts the certificate.
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: ValidityStart}); err != nil {
		t.Errorf("cert not valid at ValidityStart: %v", err)
	}
}

func TestIssueNodeRejectsBadInput(t *testing.T) {
	ca := mustCA(t, "c")
	for _, id := range []string{"", "../x", "a b", strings.Repeat("x", 65)} {
		if _, _, err := ca.IssueNode(id, nil, 0); err == nil {
			t.Errorf("IssueNode(%q) succeeded", id)
		}
	}
	if _, _, err := ca.IssueNode("a", []string{"host:80"}, 0); err == nil {
		t.Error("host with port accepted")
	}
	if _, err := NewCA("", 0); err == nil {
		t.Error("empty CA name accepted")
	}
}

func TestLoadCARoundTripAndMismatch(t *testing.T) {
	ca := mustCA(t, "c")
	loaded, err := LoadCA(ca.CertPEM(), ca.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _ := mustNode(t, loaded, "b")
	cert, _ := parseCertPEM(certPEM)
	if err := cert.CheckSignatureFrom(ca.Certificate()); err != nil {
		t.Errorf("cert issued by loaded CA not signed by original: %v", err)
	}
	other := mustCA(t, "other")
	if _, err := LoadCA(ca.CertPEM(), other.KeyPEM()); err == nil {
		t.Error("LoadCA accepted a key of another CA")
	}
	nodeCert, nodeKey := mustNode(t, ca, "n")
	if _, err := LoadCA(nodeCert, nodeKey); err == nil {
		t.Error("LoadCA accepted a node certificate")
	}
	if _, err := LoadCA([]byte("garbage"), ca.KeyPEM()); err == nil {
		t.Error("LoadCA accepted garbage")
	}
}

func TestWriteFilesAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	ca := mustCA(t, "c")
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	c, k := mustNode(t, ca, "a", "127.0.0.1")
	if err := WriteNodeFiles(dir, "a", c, k); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, "ca.pem"):     0o644,
		filepath.Join(dir, "ca-key.pem"): 0o600,
		filepath.Join(dir, "a.pem"):      0o644,
		filepath.Join(dir, "a-key.pem"):  0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	// One mode for the TLS directory, whoever writes it (init, setup).
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != DirMode&^os.FileMode(umask) {
		t.Errorf("%s: mode %v, want %v (%v)", dir, fi.Mode().Perm(), DirMode, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	if _, err := LoadCAFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadMutualTLS(CAFile(dir), NodeCertFile(dir, "a"), NodeKeyFile(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNodeFiles(dir, "../evil", c, k); err == nil {
		t.Error("WriteNodeFiles accepted a path in the node id")
	}
}

func TestLoadMutualTLSErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, "c")
	other := mustCA(t, "other")
	must(t, ca.WriteFiles(dir))
	c, k := mustNode(t, ca, "a")
	must(t, WriteNodeFiles(dir, "a", c, k))
	oc, ok := mustNode(t, other, "x")
	must(t, WriteNodeFiles(dir, "x", oc, ok))
	garbage := filepath.Join(dir, "garbage.pem")
	must(t, os.WriteFile(garbage, []byte("not pem"), 0o600))
	missing := filepath.Join(dir, "missing.pem")

	cases := []struct {
		name, ca, cert, key, wantInErr string
	}{
		{"missing CA", missing, NodeCertFile(dir, "a"), NodeKeyFile(dir, "a"), missing},
		{"garbage CA", garbage, NodeCertFile(dir, "a"), NodeKeyFile(dir, "a"), garbage},
		{"garbage cert", CAFile(dir), garbage, NodeKeyFile(dir, "a"), garbage},
		{"missing key", CAFile(dir), NodeCertFile(dir, "a"), missing, missing},
		{"garbage key", CAFile(dir), NodeCertFile(dir, "a"), garbage, garbage},
		{"key of another cert", CAFile(dir), NodeCertFile(dir, "a"), NodeKeyFile(dir, "x"), NodeKeyFile(dir, "x")},
		{"cert from another CA", CAFile(dir), NodeCertFile(dir, "x"), NodeKeyFile(dir, "x"), NodeCertFile(dir, "x")},
		{"node cert as CA", NodeCertFile(dir, "a"), NodeCertFile(dir, "a"), NodeKeyFile(dir, "a"), NodeCertFile(dir, "a")},
	}
	for _, tc := range cases {
		_, _, err := LoadMutualTLS(tc.ca, tc.cert, tc.key)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("%s: error %q does not name %s", tc.name, err, tc.wantInErr)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// handshake runs a TLS handshake between the two configs over loopback and
// returns the server-side and client-side errors. The client also reads,
// because in TLS 1.3 a client learns of its certificate's rejection only
// after its own handshake has finished.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = c.Write([]byte("x"))
		}
		done <- err
	}()
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), client)
	if err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	return <-done, err
}

func TestMutualTLSAcceptsClusterPeers(t *testing.T) {
	ca := mustCA(t, "c")
	s, _ := mustMTLS(t, ca, "a")
	_, c := mustMTLS(t, ca, "b")
	if se, ce := handshake(t, s, c); se != nil || ce != nil {
		t.Fatalf("server err %v, client err %v", se, ce)
	}
	if s.MinVersion != tls.VersionTLS13 || c.MinVersion != tls.VersionTLS13 {
		t.Error("MinVersion is not TLS 1.3")
	}
	if s.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Error("server does not require client certificates")
	}
}

func TestMutualTLSIgnoresHostName(t *testing.T) {
	ca := mustCA(t, "c")
	// The server's certificate names another IP than the one dialed.
	certPEM, keyPEM := mustNode(t, ca, "a", "10.9.8.7")
	s, _, err := MutualTLSConfig(ca.CertPEM(), certPEM, keyPEM)
	must(t, err)
	_, c := mustMTLS(t, ca, "b")
	c = c.Clone()
	c.ServerName = "somewhere-else.example"
	if se, ce := handshake(t, s, c); se != nil || ce != nil {
		t.Fatalf("server err %v, client err %v", se, ce)
	}
}

func TestMutualTLSRejectsClientWithoutCert(t *testing.T) {
	ca := mustCA(t, "c")
	s, c := mustMTLS(t, ca, "a")
	c = c.Clone()
	c.Certificates = nil
	se, ce := handshake(t, s, c)
	if se == nil || ce == nil {
		t.Fatalf("handshake without client cert: server err %v, client err %v", se, ce)
	}
}

func TestMutualTLSRejectsOtherCA(t *testing.T) {
	ca := mustCA(t, "c")
	other := mustCA(t, "other")
	s, c := mustMTLS(t, ca, "a")
	osrv, oc := mustMTLS(t, other, "x")
	if se, ce := handshake(t, s, oc); se == nil || ce == nil {
		t.Errorf("client from another CA: server err %v, client err %v", se, ce)
	}
	if se, ce := handshake(t, osrv, c); se == nil || ce == nil {
		t.Errorf("server from another CA: server err %v, client err %v", se, ce)
	}
}

func TestMutualTLSRejectsClientWithServerOnlyUsage(t *testing.T) {
	ca := mustCA(t, "c")
	s, _ := mustMTLS(t, ca, "a")
	_, c := mustMTLS(t, ca, "b")
	pair := issueWithUsage(t, ca, x509.ExtKeyUsageServerAuth)
	c = c.Clone()
	c.Certificates = []tls.Certificate{pair}
	if se, ce := handshake(t, s, c); se == nil || ce == nil {
		t.Errorf("server-only cert as client: server err %v, client err %v", se, ce)
	}
	// And a client-only certificate cannot serve.
	s = s.Clone()
	s.Certificates = []tls.Certificate{issueWithUsage(t, ca, x509.ExtKeyUsageClientAuth)}
	_, c = mustMTLS(t, ca, "b")
	if _, ce := handshake(t, s, c); ce == nil {
		t.Error("client-only cert accepted as server")
	}
}

func issueWithUsage(t *testing.T, ca *CA, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "odd"},
		NotBefore:    ValidityStart,
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	keyPEM, err := encodeKey(key)
	must(t, err)
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM)
	must(t, err)
	return pair
}

func TestPeerNodeID(t *testing.T) {
	if PeerNodeID(tls.ConnectionState{}) != "" {
		t.Error("PeerNodeID of no certs")
	}
	ca := mustCA(t, "c")
	certPEM, _ := mustNode(t, ca, "node-b")
	cert, _ := parseCertPEM(certPEM)
	if got := PeerNodeID(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); got != "node-b" {
		t.Errorf("PeerNodeID = %q", got)
	}
}

func TestVerifyPeerWithoutCertificates(t *testing.T) {
	if err := verifyPeer(tls.ConnectionState{}, x509.NewCertPool(), x509.ExtKeyUsageServerAuth); !errors.Is(err, errNoPeerCert) {
		t.Errorf("err = %v", err)
	}
}

func TestCertClockClampsUnsetClock(t *testing.T) {
	if CertClock().Before(ValidityStart) {
		t.Error("CertClock before ValidityStart")
	}
	if got := notAfter(time.Hour); got.Sub(time.Now()) > 2*time.Hour {
		t.Errorf("notAfter(1h) = %v", got)
	}
}
