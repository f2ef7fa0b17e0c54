package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/certrenew"
	"masterorder/node/nodetest"
	"masterorder/node/pki"
)

// skewClock is a box's wall clock a test moves forward.
type skewClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *skewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

func (c *skewClock) advance(d time.Duration) {
	c.mu.Lock()
	c.skew += d
	c.mu.Unlock()
}

// Three boxes serving staff HTTPS. Boxes a and c hold the CA key (as the
// wizard's do) and certificates an hour before their renewal; box b has no
// CA key and 9 days left. A tablet trusting only the cluster CA keeps a
// connection to box a while its clock passes the renewal point: the box
// renews without a restart, the pooled connection goes on with no error,
// the next handshake sees the new certificate for the same names. Every
// member's status reports its certificates; box b's warns (no_ca_key).
func TestHTTPSCertificateRenewsOnARunningBox(t *testing.T) {
	clocks := []*skewClock{{}, {}, {}}
	var caFile string
	c := nodetest.Start(t, 3, func(i int, cfg *node.Config) {
		tlsDir := filepath.Dir(cfg.TLS.CAFile)
		caFile = cfg.TLS.CAFile
		ca, err := pki.LoadCAFiles(tlsDir)
		if err != nil {
			t.Fatal(err)
		}
		issuedAt := time.Now().Add(pki.HTTPSValidity/certrenew.RenewFraction + time.Hour - pki.HTTPSValidity + 24*time.Hour)
		dir := tlsDir
		if cfg.NodeID == "b" {
			issuedAt = time.Now().Add(-pki.HTTPSValidity + 10*24*time.Hour)
			// Box b's own TLS directory: the CA certificate, no key.
			dir = filepath.Join(filepath.Dir(tlsDir), "tls-b")
			if err := pki.WriteFile(dir, "ca.pem", ca.CertPEM()); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{cfg.TLS.CertFile, cfg.TLS.KeyFile} {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := pki.WriteFile(dir, filepath.Base(f), data); err != nil {
					t.Fatal(err)
				}
			}
			cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = pki.CAFile(dir), pki.NodeCertFile(dir, "b"), pki.NodeKeyFile(dir, "b")
		}
		cert, key, err := ca.IssueHTTPSAt(cfg.NodeID, []string{"127.0.0.1", "localhost"}, issuedAt)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteHTTPSFiles(dir, cfg.NodeID, cert, key); err != nil {
			t.Fatal(err)
		}
		cfg.TLS.HTTPSCertFile, cfg.TLS.HTTPSKeyFile = pki.HTTPSCertFile(dir, cfg.NodeID), pki.HTTPSKeyFile(dir, cfg.NodeID)
		cfg.HTTPSAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	}, func(i int) node.Options {
		return node.Options{WallClock: clocks[i].Now, CertCheckEvery: 20 * time.Millisecond}
	}, nil)
	c.WaitLeader(20 * time.Second)

	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	tablet := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(i int) (*x509.Certificate, bool) {
		t.Helper()
		var reused bool
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(g httptrace.GotConnInfo) { reused = g.Reused }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.Configs[i].HTTPSAddr+"/api/cluster/status", nil)
		res, err := tablet.Do(req)
		if err != nil {
			t.Fatalf("tablet to box %s: %v", c.Configs[i].NodeID, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("tablet to box %s: %d", c.Configs[i].NodeID, res.StatusCode)
		}
		return res.TLS.PeerCertificates[0], reused
	}

	old, _ := get(0)
	if left := time.Until(old.NotAfter); left > 300*24*time.Hour || left < 200*24*time.Hour {
		t.Fatalf("box a serves a certificate with %v left before its renewal", left)
	}
	// Box a's clock passes the renewal point.
	clocks[0].advance(2 * time.Hour)
	deadline := time.Now().Add(15 * time.Second)
	for c.Nodes[0].CertStatus() == nil || c.Nodes[0].CertStatus().RenewedAt == "" {
		if time.Now().After(deadline) {
			t.Fatalf("box a did not renew: %+v", c.Nodes[0].CertStatus())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cert, reused := get(0); !reused || !cert.Equal(old) {
		t.Fatalf("the pooled connection after the renewal: reused %v", reused)
	}
	tr.CloseIdleConnections()
	renewed, reused := get(0)
	if reused || renewed.Equal(old) || !renewed.NotAfter.After(time.Now().Add(790*24*time.Hour)) {
		t.Fatalf("a new handshake after the renewal: reused %v, ends %v", reused, renewed.NotAfter)
	}
	if fmt.Sprint(renewed.DNSNames, renewed.IPAddresses) != fmt.Sprint(old.DNSNames, old.IPAddresses) {
		t.Fatalf("names changed: %v %v -> %v %v", old.DNSNames, old.IPAddresses, renewed.DNSNames, renewed.IPAddresses)
	}
	// Box b still serves its old certificate: the tablet connects.
	if cert, _ := get(1); time.Until(cert.NotAfter) > 10*24*time.Hour {
		t.Fatalf("box b's certificate ends %v", cert.NotAfter)
	}

	// Box c's status, with each member's certificates as reported.
	deadline = time.Now().Add(20 * time.Second)
	for {
		st := c.Nodes[2].Status()
		got := map[string]*certrenew.Status{}
		for _, m := range st.Nodes {
			got[m.ID] = m.Certificates
		}
		a, b, cc := got["a"], got["b"], got["c"]
		if a != nil && b != nil && cc != nil && a.RenewedAt != "" {
			if a.Warn || a.Problem != "" || a.HTTPSNotAfter != renewed.NotAfter.UTC().Format(time.RFC3339) {
				t.Fatalf("box a's certificates: %+v", a)
			}
			if !b.Warn || b.Problem != certrenew.ProblemNoCAKey || b.Detail == "" || b.LapsesAt == "" {
				t.Fatalf("box b's certificates: %+v", b)
			}
			if cc.Warn || cc.Problem != "" || cc.CANotAfter == "" || cc.NodeNotAfter == "" {
				t.Fatalf("box c's certificates: %+v", cc)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members' certificates after 20 s: a %+v b %+v c %+v", a, b, cc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
