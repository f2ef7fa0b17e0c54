package cli

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"masterorder/orders"
	"masterorder/setup/cluster"
)

// initOne runs `init` for a single box and returns its config as a map.
func initOne(t *testing.T, extra ...string) (string, map[string]any) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir,
		"--staff-password", "correct horse battery", "--kitchen-password", "kitchen tablet 42"}, extra...)
	mustRun(t, args...)
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

// init writes what a store owner installs on tablets (ca.crt), an HTTPS
// certificate a tablet accepts (names: the box's address and public_url's
// host; at most 825 days, iOS's limit), a kitchen password, and refuses
// passwords a guest could guess.
func TestInitHTTPSAndPasswords(t *testing.T) {
	dir := t.TempDir()
	out := mustRun(t, "init", "--shop-id", "s", "--nodes", "a=192.168.1.10:8080:9080,b=192.168.1.11:8080:9080",
		"--out", dir, "--public-url", "http://order.local:8080")
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
	mustRun(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir2, "--plain-http")
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
	mustRun(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir)
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

// init refuses one password for manager and kitchen with the cluster's
// own rule (cluster.ErrSamePasswords, the one the wizard's page words
// too), as a bad command line.
func TestInitSamePasswordsIsTheClusterRule(t *testing.T) {
	pw := "correct horse battery"
	err := initStore(context.Background(), []string{"--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", t.TempDir(),
		"--staff-password", pw, "--kitchen-password", pw}, testEnv(io.Discard, io.Discard))
	if !errors.Is(err, cluster.ErrSamePasswords) {
		t.Errorf("init with one password for both: %v, want cluster.ErrSamePasswords", err)
	}
	if code := exitCode(err, io.Discard); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

func TestInitSystemdAndAddNode(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "init", "--shop-id", "ramen", "--nodes", "a=192.168.1.10:80:9080,b=192.168.1.11:8080:9080", "--out", dir, "--systemd", "--staff-password", "a-long-password")
	for _, id := range []string{"a", "b"} {
		cfg, err := orders.LoadConfig(filepath.Join(dir, id+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DataDir != "/var/lib/masterorder" || cfg.TLS.CertFile != "/etc/masterorder/tls/"+id+".pem" || cfg.Join {
			t.Fatalf("%s.toml: %+v", id, cfg)
		}
		unit, err := os.ReadFile(filepath.Join(dir, "masterorder-"+id+".service"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"User=masterorder", "StateDirectory=masterorder", "Restart=on-failure", "RestartPreventExitStatus=2",
			"StandardOutput=journal", "ExecStart=/usr/local/bin/masterorder run --config /etc/masterorder/" + id + ".toml", "WantedBy=multi-user.target"} {
			if !strings.Contains(string(unit), want+"\n") {
				t.Errorf("unit %s lacks %q", id, want)
			}
		}
	}

	out := mustRun(t, "init", "--add-node", "d=192.168.1.13:8080:9080", "--out", dir, "--systemd")
	d, err := orders.LoadConfig(filepath.Join(dir, "d.toml"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := orders.LoadConfig(filepath.Join(dir, "a.toml"))
	if !d.Join || len(d.Peers) != 3 || d.ClusterSecret != a.ClusterSecret || d.Staff.TokenSecret != a.Staff.TokenSecret || d.DataDir != "/var/lib/masterorder" {
		t.Fatalf("d.toml: %+v", d)
	}
	for _, f := range []string{"tls/d.pem", "tls/d-key.pem", "masterorder-d.service"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(out, "masterorder members add --url http://192.168.1.10:80 --id d") {
		t.Errorf("next step not printed: %s", out)
	}
	if code, _, _ := runCLI(t, "init", "--add-node", "a=192.168.1.20:8080:9080", "--out", dir, "--force"); code != 2 {
		t.Errorf("adding an existing id: exit %d", code)
	}
}
