package cli

import (
	"os"
	"path/filepath"
	"testing"

	"masterorder/setup"
)

// TestResetCLI: `masterorder reset` erases nothing without --yes; with it
// the box's config, certificates, data and setup identity go, and the
// next `run` is setup mode.
func TestResetCLI(t *testing.T) {
	dir := t.TempDir()
	l := setup.Layout{EtcDir: filepath.Join(dir, "etc"), StateDir: filepath.Join(dir, "state")}
	os.MkdirAll(filepath.Join(l.EtcDir, "tls"), 0o755)
	os.MkdirAll(filepath.Join(l.StateDir, "raft"), 0o755)
	os.WriteFile(l.ConfigPath(), []byte("node_id = \"a\"\n"), 0o600)
	if code, _, _ := runCLI(t, "reset", "--etc-dir", l.EtcDir, "--state-dir", l.StateDir); code != 2 || l.ModeOf() != setup.ModeMember {
		t.Fatalf("reset without --yes: exit %d, mode %s", code, l.ModeOf())
	}
	if code, out, errs := runCLI(t, "reset", "--yes", "--etc-dir", l.EtcDir, "--state-dir", l.StateDir); code != 0 {
		t.Fatalf("reset --yes: %d %s %s", code, out, errs)
	}
	if l.ModeOf() != setup.ModeSetup {
		t.Errorf("mode after reset: %s", l.ModeOf())
	}
	for _, p := range []string{filepath.Join(l.EtcDir, "tls"), filepath.Join(l.StateDir, "raft")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s stays after a reset", p)
		}
	}
}
