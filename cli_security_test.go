package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"masterorder/api/apitest"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/staffauth"
)

// initOne runs `init` for a single box and returns its config as a map.
func initOne(t *testing.T, extra ...string) (string, map[string]any) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir,
		"--staff-password", "correct horse battery", "--kitchen-password", "kitchen tablet 42"}, extra...)
	if code, out, errs := runCLI(t, args...); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	path := filepath.Join(dir, "a.toml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := toml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return path, m
}

func writeTOML(t *testing.T, path string, m map[string]any) {
	t.Helper()
	b, err := toml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An attacker who can edit (or an owner who hand-writes) a config cannot
// get a plaintext cluster port: no [tls], or a secret copied from the
// example, stops `run` with exit 2 naming the setting.
func TestRunRefusesPlaintextClusterPort(t *testing.T) {
	path, m := initOne(t)
	delete(m, "tls")
	writeTOML(t, path, m)
	if code, _, errs := runCLI(t, "run", "--config", path); code != 2 || !strings.Contains(errs, "tls") {
		t.Errorf("run without [tls]: exit %d %q", code, errs)
	}

	path, m = initOne(t)
	m["cluster_secret"] = "change-me-to-a-long-random-string"
	writeTOML(t, path, m)
	if code, _, errs := runCLI(t, "run", "--config", path); code != 2 || !strings.Contains(errs, "cluster_secret") {
		t.Errorf("run with the placeholder secret: exit %d %q", code, errs)
	}
}

// init writes what a store owner installs on tablets (ca.crt), an HTTPS
// certificate a tablet accepts (names: the box's address and public_url's
// host; at most 825 days, iOS's limit), a kitchen password, and refuses
// passwords a guest could guess.
func TestInitHTTPSAndPasswords(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "init", "--shop-id", "s", "--nodes", "a=192.168.1.10:8080:9080,b=192.168.1.11:8080:9080",
		"--out", dir, "--public-url", "http://order.local:8080")
	if code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	if !strings.Contains(out, "kitchen password: ") || !strings.Contains(out, "staff password: ") || !strings.Contains(out, "ca.crt") {
		t.Errorf("init output: %s", out)
	}
	caCrt, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
	if string(caCrt) != string(caPEM) {
		t.Error("ca.crt is not the cluster CA")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCrt)
	cfg, err := orders.LoadConfig(filepath.Join(dir, "b.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPSAddr != "192.168.1.11:8443" || cfg.HTTP.AllowPlainStaff || cfg.Staff.KitchenPasswordHash == "" || cfg.PublicURL != "http://order.local:8080" {
		t.Errorf("config: https %q plain %v kitchen %q public %q", cfg.HTTPSAddr, cfg.HTTP.AllowPlainStaff, cfg.Staff.KitchenPasswordHash, cfg.PublicURL)
	}
	if len(cfg.Peers) != 2 || cfg.Peers[0].HTTPSAddr != "192.168.1.10:8443" {
		t.Errorf("peers: %+v", cfg.Peers)
	}
	raw, err := os.ReadFile(cfg.TLS.HTTPSCertFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"192.168.1.11", "order.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("HTTPS certificate for %s: %v", name, err)
		}
	}
	if days := cert.NotAfter.Sub(cert.NotBefore).Hours() / 24; days > 825 {
		t.Errorf("HTTPS certificate valid %.0f days; tablets refuse more than 825", days)
	}

	// --plain-http: no HTTPS listener, staff over plain HTTP (labs).
	dir2 := t.TempDir()
	if code, out, errs := runCLI(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir2, "--plain-http"); code != 0 {
		t.Fatalf("init --plain-http: %d %s %s", code, out, errs)
	}
	if c, err := orders.LoadConfig(filepath.Join(dir2, "a.toml")); err != nil || c.HTTPSAddr != "" || !c.HTTP.AllowPlainStaff {
		t.Errorf("--plain-http config: %+v %v", c.HTTP, err)
	}

	for name, args := range map[string][]string{
		"short":         {"--staff-password", "ramen1"},
		"common word":   {"--staff-password", "Password123!"},
		"digits":        {"--staff-password", "1234567890"},
		"weak kitchen":  {"--staff-password", "correct horse battery", "--kitchen-password", "kitchen"},
		"same password": {"--staff-password", "correct horse battery", "--kitchen-password", "correct horse battery"},
	} {
		d := t.TempDir()
		code, _, errs := runCLI(t, append([]string{"init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", d}, args...)...)
		if code != 2 {
			t.Errorf("%s: exit %d %s", name, code, errs)
		}
		if _, err := os.Stat(filepath.Join(d, "a.toml")); err == nil {
			t.Errorf("%s: a config was written", name)
		}
	}
}

// The HTTPS certificates are renewed in place: new serials, same names.
func TestInitRenewHTTPS(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	certFile := filepath.Join(dir, "tls", "a-https.pem")
	before, _ := os.ReadFile(certFile)
	if code, out, errs := runCLI(t, "init", "--renew-https", "--out", dir); code != 0 || !strings.Contains(out, "renewed 1") {
		t.Fatalf("renew: %d %s %s", code, out, errs)
	}
	after, _ := os.ReadFile(certFile)
	if len(after) == 0 || string(after) == string(before) {
		t.Error("certificate not renewed")
	}
	if _, err := orders.LoadConfig(filepath.Join(dir, "a.toml")); err != nil {
		t.Error(err)
	}
}

// `demo --listen 0.0.0.0` serves staff over plain HTTP with password
// "demo" to the whole network: it says so.
func TestDemoOnAllInterfacesWarns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop right after start-up
	var out, errb bytes.Buffer
	port := nodetest.FreePort(t)
	cmdDemo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--data-dir", t.TempDir()}, &out, &errb)
	if !strings.Contains(errb.String(), "WARNING") || !strings.Contains(errb.String(), `"demo"`) {
		t.Errorf("no warning: %q", errb.String())
	}
	errb.Reset()
	cmdDemo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t)), "--data-dir", t.TempDir()}, &out, &errb)
	if strings.Contains(errb.String(), "WARNING") {
		t.Errorf("warning on loopback: %q", errb.String())
	}
}

// rotate-secrets: every config gets the same new secrets, a token of the
// old secret no longer verifies, and the configs still run.
func TestRotateSecrets(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080,b=127.0.0.1:18081:19081", "--out", dir); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	before, _ := orders.LoadConfig(filepath.Join(dir, "a.toml"))
	oldSecret, _ := staffauth.DecodeSecret(before.Staff.TokenSecret)
	tok, _, _ := (&staffauth.Issuer{Secret: oldSecret}).Issue()
	if code, out, errs := runCLI(t, "rotate-secrets", "--out", dir); code != 0 || !strings.Contains(out, "rotated") {
		t.Fatalf("rotate-secrets: %d %s %s", code, out, errs)
	}
	a, errA := orders.LoadConfig(filepath.Join(dir, "a.toml"))
	b, errB := orders.LoadConfig(filepath.Join(dir, "b.toml"))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a.ClusterSecret == before.ClusterSecret || a.Staff.TokenSecret == before.Staff.TokenSecret {
		t.Error("secrets unchanged")
	}
	if a.ClusterSecret != b.ClusterSecret || a.Staff.TokenSecret != b.Staff.TokenSecret {
		t.Error("boxes got different secrets")
	}
	if a.HTTPSAddr != before.HTTPSAddr || a.Staff.PasswordHash != before.Staff.PasswordHash || a.Staff.KitchenPasswordHash != before.Staff.KitchenPasswordHash {
		t.Error("other settings changed")
	}
	newSecret, _ := staffauth.DecodeSecret(a.Staff.TokenSecret)
	if _, err := (&staffauth.Issuer{Secret: newSecret}).Verify(tok); err == nil {
		t.Error("a token of the old secret still verifies")
	}
	if code, _, _ := runCLI(t, "rotate-secrets", "--out", t.TempDir()); code != 2 {
		t.Errorf("rotate-secrets on an empty dir: exit %d", code)
	}
}

// The store as init writes it: a tablet that installed ca.crt reaches
// staff over HTTPS with full verification of the box's name, logs in with
// the kitchen password (role kitchen), while plain HTTP sends the staff
// page to HTTPS and refuses the login.
func TestInitStoreServesStaffOverHTTPS(t *testing.T) {
	dir := t.TempDir()
	hp, rp, sp := nodetest.FreePort(t), nodetest.FreePort(t), nodetest.FreePort(t)
	spec := fmt.Sprintf("a=127.0.0.1:%d:%d:%d", hp, rp, sp)
	if code, out, errs := runCLI(t, "init", "--shop-id", "s", "--nodes", spec, "--out", dir,
		"--staff-password", "correct horse battery", "--kitchen-password", "kitchen tablet 42"); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmdRun(ctx, []string{"--config", filepath.Join(dir, "a.toml")}, io.Discard) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("run did not stop")
		}
	}()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tablet := apitest.Client(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}})
	httpsBase := fmt.Sprintf("https://127.0.0.1:%d", sp)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := tablet.Get(httpsBase + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("HTTPS never ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := tablet.Post(httpsBase+"/api/staff/login", "application/json", strings.NewReader(`{"password":"kitchen tablet 42"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"role":"kitchen"`) {
		t.Errorf("kitchen login over HTTPS: %d %s", res.StatusCode, body)
	}
	plain := apitest.Client(t, &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	httpBase := fmt.Sprintf("http://127.0.0.1:%d", hp)
	if res, err := plain.Get(httpBase + "/staff/"); err != nil || res.StatusCode != http.StatusFound || res.Header.Get("Location") != httpsBase+"/staff/" {
		t.Errorf("plain /staff/: %v %v", err, res)
	}
	res, err = plain.Post(httpBase+"/api/staff/login", "application/json", strings.NewReader(`{"password":"correct horse battery"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 403 || !strings.Contains(string(body), "HTTPS_REQUIRED") {
		t.Errorf("plain login: %d %s", res.StatusCode, body)
	}
}
