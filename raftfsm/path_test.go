package raftfsm_test

import (
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
