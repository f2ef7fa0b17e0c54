package powercut

import (
	"os"
	"path/filepath"
	"testing"
)

// MountT mounts a power-cut filesystem for a test in fresh temporary
// directories and unmounts it in t.Cleanup.
func MountT(t testing.TB) *FS {
	t.Helper()
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	return MountDirT(t, backing, mnt)
}

// MountDirT mounts a power-cut view of backing on mnt (creating both) and
// unmounts it in t.Cleanup. Without FUSE (no /dev/fuse, no permission to
// mount) the test is skipped, except in CI (CI=true), where it fails: CI
// must run it.
func MountDirT(t testing.TB, backing, mnt string) *FS {
	t.Helper()
	for _, d := range []string{backing, mnt} {
		if err := os.MkdirAll(d, 0o750); err != nil {
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

// Backing is the directory the filesystem passes through to. Reading it
// directly is how the serving process looks at the files without a page
// fault on its own mount.
func (p *FS) Backing() string { return p.backing }
