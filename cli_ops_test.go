package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
)

const cliPassword = "cli-test-password"

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliStore starts n nodes with the domain and a known staff password.
func cliStore(t *testing.T, n int) (*nodetest.Cluster, []*orders.Service) {
	t.Helper()
	hash := orderstest.PasswordHash(t, cliPassword)
	st := orderstest.Start(t, n, func(_ int, c *orders.FileConfig) { c.Staff.PasswordHash = hash }, nil, orders.Options{})
	return st.Cluster, st.Svcs
}

func TestInitSystemdAndAddNode(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "init", "--shop-id", "ramen", "--nodes", "a=192.168.1.10:80:9080,b=192.168.1.11:8080:9080", "--out", dir, "--systemd", "--staff-password", "a-long-password")
	if code != 0 {
		t.Fatalf("init --systemd: %d %s %s", code, out, errs)
	}
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

	code, out, errs = runCLI(t, "init", "--add-node", "d=192.168.1.13:8080:9080", "--out", dir, "--systemd")
	if code != 0 {
		t.Fatalf("init --add-node: %d %s %s", code, out, errs)
	}
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

func TestMembersCLI(t *testing.T) {
	c, _ := cliStore(t, 3)
	url := "http://" + c.Configs[1].HTTPAddr
	d := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	dHTTP := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	if code, _, _ := runCLI(t, "members", "add", "--url", url, "--id", "d"); code != 2 {
		t.Errorf("add without addresses: exit %d", code)
	}
	if code, _, _ := runCLI(t, "members", "list", "--url", url); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
	if code, _, errs := runCLI(t, "members", "add", "--url", url, "--password", "wrong", "--id", "d", "--raft-addr", d, "--http-addr", dHTTP); code != 1 || !strings.Contains(errs, "INVALID_PASSWORD") {
		t.Errorf("wrong password: exit %d %s", code, errs)
	}
	t.Setenv(passwordEnv, cliPassword)
	code, out, errs := runCLI(t, "members", "add", "--url", url, "--id", "d", "--raft-addr", d, "--http-addr", dHTTP, "--voter=false")
	if code != 0 || !strings.Contains(out, "nonvoter") {
		t.Fatalf("members add: %d %s %s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "members", "promote", "--url", url, "--id", "d"); code != 0 || strings.Contains(out, "nonvoter") {
		t.Fatalf("members promote: %d %s %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "members", "remove", "--url", url, "--id", "d")
	if code != 0 || strings.Contains(out, dHTTP) {
		t.Fatalf("members remove: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "members", "remove", "--url", url, "--id", "d"); code != 1 || !strings.Contains(errs, "MEMBER_NOT_FOUND") {
		t.Fatalf("remove again: %d %s", code, errs)
	}
}

func TestBackupRestoreCLI(t *testing.T) {
	c, svcs := cliStore(t, 3)
	li, _ := c.WaitLeader(10 * time.Second)
	ctx := context.Background()
	sessionID, _, err := svcs[li].SeedDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "store.mosnap")
	url := "http://" + c.Configs[(li+1)%3].HTTPAddr
	if code, _, _ := runCLI(t, "backup", "--url", url); code != 2 {
		t.Errorf("backup without --out: exit %d", code)
	}
	code, out, errs := runCLI(t, "backup", "--url", url, "--out", file, "--password", cliPassword)
	if code != 0 || !strings.Contains(out, "sha256") {
		t.Fatalf("backup: %d %s %s", code, out, errs)
	}

	// A fresh single box from the file, with a config as init writes it.
	cfg := orders.FileConfig{NodeConfig: nodetest.Configs(t, 1, dir)[0], Config: orderstest.Domain()}
	cfg.Staff.PasswordHash = orderstest.PasswordHash(t, cliPassword) // as cliStore's nodes
	cfg.Demo = false
	raw, err := toml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "a.toml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "restore", "--in", file, "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "restore", "--in", file, "--config", cfgPath); code != 1 || !strings.Contains(errs, "fresh data_dir") {
		t.Fatalf("restore into a used data dir: %d %s", code, errs)
	}
	loaded, err := orders.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := startStore(context.Background(), loaded, nodetest.Logger(), orders.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !n.Ready() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cl, err := staffClient(ctx, "http://"+loaded.HTTPAddr, cliPassword)
	if err != nil {
		t.Fatal(err)
	}
	var menu struct{ Items []json.RawMessage }
	if err := cl.call(ctx, http.MethodGet, "/api/staff/menu", nil, &menu); err != nil || len(menu.Items) != 13 { // the demo menu (orders/demo.go)
		t.Fatalf("restored menu: %v, %d items", err, len(menu.Items))
	}
	var sessions struct{ Sessions []struct{ SessionID string } }
	if err := cl.call(ctx, http.MethodGet, "/api/staff/sessions?status=ACTIVE", nil, &sessions); err != nil || len(sessions.Sessions) != 1 || sessions.Sessions[0].SessionID != sessionID {
		t.Fatalf("restored sessions: %v %+v", err, sessions)
	}
}
