package update

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The image's box restarts when this file appears (masterorder-reboot.path):
// MasterOrder has no right to run systemctl reboot there.
func TestRaucInstallerAsksForTheRestartByFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "reboot-requested")
	if err := (raucInstaller{rebootFile: f}).Reboot(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil || !strings.Contains(string(b), "update installed") {
		t.Fatalf("reboot request: %q %v", b, err)
	}
	if err := (raucInstaller{rebootFile: filepath.Join(f, "no", "dir")}).Reboot(); err == nil {
		t.Fatal("a request that cannot be written is not an error")
	}
}

// The unit's path and the installer's agree.
func TestRebootRequestFileMatchesTheImage(t *testing.T) {
	unit, err := os.ReadFile("../build/image/rootfs/etc/systemd/system/masterorder-reboot.path")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "PathExists="+RebootRequestFile) {
		t.Fatalf("masterorder-reboot.path does not watch %s:\n%s", RebootRequestFile, unit)
	}
}
