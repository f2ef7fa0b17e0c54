package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"masterorder/bench/powercut"
)

// onlyEntries fails unless dir holds exactly names: no temporary file.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s holds %s", dir, e.Name())
		}
	}
	if len(entries) != len(names) {
		t.Errorf("%s holds %d entries, want %v", dir, len(entries), names)
	}
}

// The file gets the mode asked for whatever the process's umask, both
// when it is new and when it replaces a file of another mode.
func TestWriteFileSetsTheMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.pem")
	for _, c := range []struct {
		data string
		mode os.FileMode
	}{{"one", 0o644}, {"two", 0o600}, {"three", 0o644}} {
		if err := WriteFile(path, []byte(c.data), c.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(got) != c.data || fi.Mode().Perm() != c.mode {
			t.Errorf("after writing %q as %v: %q %v (%v)", c.data, c.mode, got, fi.Mode().Perm(), err)
		}
	}
	onlyEntries(t, dir, "ca.pem")
}

// A write that fails after its data was written (a directory stands in
// the file's place, so the rename fails) removes its temporary file.
func TestFailedWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "masterorder.toml")
	if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("node_id = \"a\"\n"), 0o600); err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	onlyEntries(t, dir, "masterorder.toml")
	// A directory that cannot be written to: nothing is left either.
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	onlyEntries(t, dir, "masterorder.toml")
}

// What was written survives a power cut right after the write, in the
// directories MkdirAll made for it, and a replacement survives as the
// new contents; no temporary file comes back.
func TestWrittenFileSurvivesAPowerCut(t *testing.T) {
	p := powercut.MountT(t)
	dir := filepath.Join(p.Mountpoint(), "etc", "masterorder", "tls")
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o750&^umask() {
		t.Fatalf("made %s: %v %v", dir, fi.Mode().Perm(), err)
	}
	path := filepath.Join(dir, "a-key.pem")
	for _, data := range [][]byte{[]byte("first key"), bytes.Repeat([]byte("second key "), 1000)} {
		if err := WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := p.Crash(powercut.CrashOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after the power cut: %d bytes (want %d), %v", len(got), len(data), err)
		}
		onlyEntries(t, dir, "a-key.pem")
	}
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
