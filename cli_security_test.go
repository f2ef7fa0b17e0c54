package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// initOne runs `init` for a single box and returns its config as a map.
func initOne(t *testing.T, extra ...string) (string, map[string]any) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080", "--out", dir,
		"--staff-password", "correct horse battery"}, extra...)
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
