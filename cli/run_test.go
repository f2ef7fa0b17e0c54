package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node/nodetest"
)

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

// The store as init writes it: a tablet that installed ca.crt reaches
// staff over HTTPS with full verification of the box's name, logs in with
// the kitchen password (role kitchen), while plain HTTP sends the staff
// page to HTTPS and refuses the login.
func TestInitStoreServesStaffOverHTTPS(t *testing.T) {
	dir := t.TempDir()
	hp, rp, sp := nodetest.FreePort(t), nodetest.FreePort(t), nodetest.FreePort(t)
	spec := fmt.Sprintf("a=127.0.0.1:%d:%d:%d", hp, rp, sp)
	mustRun(t, "init", "--shop-id", "s", "--nodes", spec, "--out", dir, "--staff-password", "correct horse battery", "--kitchen-password", "kitchen tablet 42")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", filepath.Join(dir, "a.toml")}, testEnv(io.Discard, io.Discard))
	}()
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
	waitHTTP(t, tablet, httpsBase+"/readyz", 200)
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
