package update_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/update"
)

// recorder is an Installer that records what the box asked of it.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string)                          { r.mu.Lock(); r.calls = append(r.calls, s); r.mu.Unlock() }
func (r *recorder) Install(context.Context, string) error { r.add("install"); return nil }
func (r *recorder) Reboot() error                         { r.add("reboot"); return nil }
func (r *recorder) Commit() error                         { r.add("commit"); return nil }
func (r *recorder) Fallback() error                       { r.add("fallback"); return nil }
func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// saveRebooting writes the state a box leaves before its restart into
// version to.
func saveRebooting(t *testing.T, dataDir, from, to string) {
	t.Helper()
	dir := filepath.Join(dataDir, "update")
	os.MkdirAll(dir, 0o700)
	b, _ := json.Marshal(update.BoxState{State: update.StateRebooting, From: from, To: to})
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func stateOf(t *testing.T, dataDir string) update.BoxState {
	t.Helper()
	var s update.BoxState
	b, err := os.ReadFile(filepath.Join(dataDir, "update", "state.json"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("state file: %v", err)
	}
	return s
}

// A box that starts on the new version and becomes healthy (a one-box
// store: it leads and has applied everything) commits it.
func TestTrialCommitsWhenHealthy(t *testing.T) {
	rec := &recorder{}
	var box *update.Box
	c := nodetest.Start(t, 1, func(_ int, cfg *node.Config) {
		saveRebooting(t, cfg.DataDir, "1.0.0", "1.1.0")
	}, nil, func(_ int, n *node.Node) {
		b, err := update.New(n, update.Options{Version: "1.1.0", Installer: rec})
		if err != nil {
			t.Fatal(err)
		}
		box = b
	})
	if !box.InTrial() {
		t.Fatalf("on the new version after the restart: %+v, want trial", box.State())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	box.Run(ctx)
	if got := rec.got(); len(got) != 1 || got[0] != "commit" {
		t.Fatalf("installer calls %v, want [commit]", got)
	}
	if s := stateOf(t, c.Configs[0].DataDir); s.State != update.StateCommitted || box.InTrial() {
		t.Fatalf("after the commit: %+v", s)
	}
}

// A box on the new version that does not become healthy within the trial
// timeout goes back by itself: the installer's fallback, and on the old
// version the box says it rolled back.
func TestTrialFallsBackWhenNotHealthy(t *testing.T) {
	cfg := nodetest.Configs(t, 1, t.TempDir())[0]
	cfg.Update.TrialTimeout = node.Duration{Duration: 2 * time.Second}
	saveRebooting(t, cfg.DataDir, "1.0.0", "1.1.0")
	// The node is never started: it never becomes ready.
	n, err := node.New(cfg, node.Options{Logger: nodetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	box, err := update.New(n, update.Options{Version: "1.1.0", Installer: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	box.Run(ctx)
	if got := rec.got(); len(got) != 1 || got[0] != "fallback" {
		t.Fatalf("installer calls %v, want [fallback]", got)
	}
	// The boot loader started the old version: it reports the rollback.
	n.Stop()
	n2, err := node.New(cfg, node.Options{Logger: nodetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Stop()
	old, err := update.New(n2, update.Options{Version: "1.0.0", Installer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if s := old.State(); s.State != update.StateRolledBack || s.Error != update.CodeRolledBack {
		t.Fatalf("on the old version: %+v", s)
	}
}
