package raftfsm_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"masterorder/raftfsm"
)

// A data_dir may contain characters that mean something in a file: URI;
// the SQLite file must still land inside it, one per directory.
func TestFSMFilesStayInOddlyNamedDirs(t *testing.T) {
	base := t.TempDir()
	for _, name := range []string{"store#1", "store#2", "what?x=1", "100%", "a b"} {
		dir := filepath.Join(base, name)
		f, err := raftfsm.Open(raftfsm.Options{Dir: dir})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
		if _, err := os.Stat(filepath.Join(dir, "domain.sqlite")); err != nil {
			t.Errorf("%s: SQLite file not in its directory: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("stray file %s next to the data dirs", e.Name())
		}
	}
}

// A snapshot restores into a data_dir whose name means something in a
// file: URI ('#', '?', '%'): the restored SQLite file is built in place,
// not somewhere the URI parser points at.
func TestRestoreIntoOddlyNamedDirs(t *testing.T) {
	base := t.TempDir()
	src := openFSM(t, filepath.Join(base, "src#1"))
	fill(t, src, 1, 50)
	var snap bytes.Buffer
	if err := src.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	want := dump(t, src)
	for _, name := range []string{"store#2", "what?x=1", "100%", "50%25", "a b#c?d%e"} {
		dst := openFSM(t, filepath.Join(base, name))
		if err := dst.Restore(io.NopCloser(bytes.NewReader(snap.Bytes()))); err != nil {
			t.Fatalf("%s: restore: %v", name, err)
		}
		if got := dump(t, dst); !bytes.Equal(got, want) {
			t.Fatalf("%s: restored dump differs", name)
		}
		if ok, err := dst.Consistent(); !ok || err != nil {
			t.Fatalf("%s: restored files disagree: %v", name, err)
		}
		// And it snapshots from there in turn.
		var again bytes.Buffer
		if err := dst.WriteSnapshot(&again); err != nil {
			t.Fatalf("%s: snapshot after restore: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("stray file %s next to the data dirs", e.Name())
		}
	}
}
