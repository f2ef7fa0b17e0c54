package powercut

import (
	"os"
	"path/filepath"
	"testing"
)

// MountT mounts a power-cut filesystem for a test in fresh temporary
// directories and unmounts it in t.Cleanup. Without FUSE (no /dev/fuse,
// no permission to mount) the test is skipped, except in CI (CI=true),
// where it fails: CI must run it.
func MountT(t testing.TB) *FS {
	t.Helper()
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Mount(backing, mnt)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("FUSE is required in CI (install fuse3; /dev/fuse must work): %v", err)
		}
		t.Skipf("no FUSE here: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return p
}
