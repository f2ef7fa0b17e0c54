package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"masterorder/node/nodetest"
	"masterorder/node/pki"
	"masterorder/orders"
)

// TestCertificateWarning: box b serves staff HTTPS with a certificate 20
// days from its end and has no CA key (as a box made by `masterorder
// init`), so it cannot renew it; boxes a and c hold the key. The status
// box b reports (no fixture) puts a warning on the console's Boxes page
// and its banner, in words, with what to do and the technical reason
// under "details" (the kitchen's banner leaves it out). Screenshots at
// 390 and 1024 px, ja and en (docs/img/console-cert-warning-*).
func TestCertificateWarning(t *testing.T) {
	b := startBrowser(t)
	s := startStoreWith(t, func(c *orders.FileConfig) {
		tlsDir := filepath.Dir(c.TLS.CAFile)
		ca, err := pki.LoadCAFiles(tlsDir)
		if err != nil {
			t.Fatal(err)
		}
		dir, issuedAt := tlsDir, time.Now().Add(-24*time.Hour)
		if c.NodeID == "b" {
			issuedAt = time.Now().Add(-pki.HTTPSValidity + 21*24*time.Hour)
			dir = filepath.Join(filepath.Dir(tlsDir), "tls-b")
			if err := pki.WriteFile(dir, "ca.pem", ca.CertPEM()); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{c.TLS.CertFile, c.TLS.KeyFile} {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := pki.WriteFile(dir, filepath.Base(f), data); err != nil {
					t.Fatal(err)
				}
			}
			c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile = pki.CAFile(dir), pki.NodeCertFile(dir, "b"), pki.NodeKeyFile(dir, "b")
		}
		cert, key, err := ca.IssueHTTPSAt(c.NodeID, []string{"127.0.0.1"}, issuedAt)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteHTTPSFiles(dir, c.NodeID, cert, key); err != nil {
			t.Fatal(err)
		}
		c.TLS.HTTPSCertFile, c.TLS.HTTPSKeyFile = pki.HTTPSCertFile(dir, c.NodeID), pki.HTTPSKeyFile(dir, c.NodeID)
		c.HTTPSAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	})

	const n = 0 // the pages come from box a
	st := b.open("staff-cert", s.url(n)+"/staff/#cluster", phoneW, phoneH)
	st.login()
	st.waitFor("box b's certificate warning", `!!document.querySelector('#health-problems [data-problem="cert"][data-box-id="b"][data-cert-problem="no_ca_key"]')`, 30*time.Second)
	if st.eval(`!!document.querySelector('#health-problems [data-problem="cert"]:not([data-box-id="b"])')`) {
		t.Fatal("a certificate warning for a box that renews its own")
	}
	words := st.text(`#health-problems [data-problem="cert"] p`)
	t.Logf("warning (ja): %q", words)
	if !strings.Contains(words, "端末 b の安全な接続のための証明書が") || !strings.Contains(words, "に切れます") {
		t.Fatalf("warning %q", words)
	}
	if !strings.Contains(st.text(`#health-problems [data-problem="cert"] .cert-details`), "no_ca_key") {
		t.Fatal("the technical reason is not under the details")
	}
	st.waitFor("the banner", `/端末 b の証明書が/.test(document.querySelector('#health-banner').textContent) && !document.querySelector('#health-banner').hidden`, 30*time.Second)
	// The summary above the warning does not say all is well.
	if sum := st.text("#health-words"); !strings.Contains(sum, "下の注意を読んで") || strings.Contains(sum, "問題ありません") {
		t.Fatalf("summary above a certificate warning: %q", sum)
	}
	banner := st.text("#health-banner")
	t.Logf("console banner (ja): %q", banner)
	st.do(scrollTop())
	st.screenshot("console-cert-banner-ja-390")
	st.click(`#health-problems [data-problem="cert"] .cert-details summary`)
	docShotsBelow(st, "console-cert-warning", `!!document.querySelector('#health-problems [data-problem="cert"]')`, `#health-problems [data-problem="cert"]`)
	st.click("#lang-toggle")
	st.waitFor("English words", `/^Box b’s certificate for secure connections ends on \d+ \w+ \d{4}/.test(document.querySelector('#health-problems [data-problem="cert"] p').textContent)`, 10*time.Second)
	t.Logf("warning (en): %q", st.text(`#health-problems [data-problem="cert"] p`))

}
