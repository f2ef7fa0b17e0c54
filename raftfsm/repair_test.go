package raftfsm_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

// bigFill applies n entries with distinct keys, so both files span many
// pages.
func bigFill(t *testing.T, f *raftfsm.FSM, n uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := uint64(1); i <= n; i++ {
		logs = append(logs, setEntry(i, int64(1000+i), fmt.Sprintf("key-%05d", i), strings.Repeat("v", 1000)))
		if len(logs) == 100 || i == n {
			for _, x := range f.ApplyBatch(logs) {
				if r := resp(t, x); r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			logs = nil
		}
	}
}

// copyDir copies the files of src into a new dir, as a power cut would
// find them on disk while the FSM is still open (WAL not checkpointed).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

func truncateThird(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/3); err != nil {
		t.Fatal(err)
	}
}

func zeros(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if fi.Size() < off+n {
		t.Fatalf("%s is %d bytes, too small to zero [%d,%d)", path, fi.Size(), off, off+n)
	}
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

// TestOpenSetsAsideDamagedFiles damages the files of a populated FSM in
// the ways a power cut or a person does, and checks that Open neither
// fails nor panics but sets the files aside (renamed, not deleted) and
// starts from empty files at index 0, for the node to rebuild.
func TestOpenSetsAsideDamagedFiles(t *testing.T) {
	src := t.TempDir()
	f := openFSM(t, src)
	bigFill(t, f, 3000)
	f.Close()
	closed := copyDir(t, src) // after a clean stop: checkpointed
	// As on disk mid-run: too few pages yet for a checkpoint (one batch,
	// under walAutocheckpointPages), so the WAL holds every batch.
	src2 := t.TempDir()
	f2 := openFSM(t, src2)
	bigFill(t, f2, 30)
	live := copyDir(t, src2)
	f2.Close()

	cases := []struct {
		name   string
		from   string
		damage func(dir string)
		want   string
	}{
		{"bbolt truncated to a third", closed, func(d string) { truncateThird(t, filepath.Join(d, "fsm.bolt")) }, "cut short"},
		{"bbolt pages zeroed", closed, func(d string) { zeros(t, filepath.Join(d, "fsm.bolt"), 8*4096, 16<<10) }, "fsm.bolt"},
		{"bbolt meta pages zeroed", closed, func(d string) { zeros(t, filepath.Join(d, "fsm.bolt"), 0, 8192) }, "no valid meta page"},
		{"bbolt missing", closed, func(d string) { os.Remove(filepath.Join(d, "fsm.bolt")) }, "missing"},
		{"SQLite missing", closed, func(d string) { os.Remove(filepath.Join(d, "domain.sqlite")) }, "missing"},
		{"16 KiB of zeros in SQLite", closed, func(d string) { zeros(t, filepath.Join(d, "domain.sqlite"), 64<<10, 16<<10) }, "domain.sqlite"},
		{"SQLite header zeroed", closed, func(d string) { zeros(t, filepath.Join(d, "domain.sqlite"), 0, 16<<10) }, "domain.sqlite"},
		{"WAL deleted mid-run", live, func(d string) {
			if err := os.Remove(filepath.Join(d, "domain.sqlite-wal")); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(d, "domain.sqlite-shm"))
		}, "disagree"},
		{"the issue's damage: bbolt a third, 16 KiB zeros, WAL deleted", closed, func(d string) {
			truncateThird(t, filepath.Join(d, "fsm.bolt"))
			zeros(t, filepath.Join(d, "domain.sqlite"), 32<<10, 16<<10)
			os.Remove(filepath.Join(d, "domain.sqlite-wal"))
		}, "fsm.bolt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, c.from)
			c.damage(dir)
			before := map[string]int64{}
			for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal"} {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
					before[name] = fi.Size()
				}
			}
			g, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: testRegistry(), Migrate: migrate})
			if err != nil {
				t.Fatalf("Open failed on damaged files: %v", err)
			}
			defer g.Close()
			d := g.Repaired()
			if d == nil {
				t.Fatal("damage not detected")
			}
			if !strings.Contains(d.Error(), c.want) {
				t.Errorf("problem %q does not mention %q", d, c.want)
			}
			if g.Applied() != 0 || counter(t, g) != 0 {
				t.Errorf("after repair: applied %d, counter %d; want empty files", g.Applied(), counter(t, g))
			}
			if ok, err := g.Consistent(); !ok || err != nil {
				t.Errorf("after repair: Consistent %v %v", ok, err)
			}
			for name, size := range before {
				fi, err := os.Stat(filepath.Join(dir, "set-aside", name))
				if err != nil || fi.Size() != size {
					t.Errorf("%s not set aside intact: %v", name, err)
				}
			}
			// Usable: the rebuild applies from index 1.
			bigFill(t, g, 50)
			if g.Applied() != 50 {
				t.Errorf("applied %d after refilling", g.Applied())
			}
		})
	}
}

// Sound files are kept as they are, also after a crash that left the
// latest batches only in the WAL.
func TestOpenKeepsSoundFiles(t *testing.T) {
	src := t.TempDir()
	f := openFSM(t, src)
	bigFill(t, f, 1000)
	want := dump(t, f)
	live := copyDir(t, src)
	for _, dir := range []string{live, src} {
		if dir == src {
			f.Close()
		}
		g, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: testRegistry(), Migrate: migrate})
		if err != nil {
			t.Fatal(err)
		}
		if d := g.Repaired(); d != nil {
			t.Fatalf("sound files set aside: %v", d)
		}
		if g.Applied() != 1000 || !bytes.Equal(dump(t, g), want) {
			t.Fatalf("applied %d; dump equal %v", g.Applied(), bytes.Equal(dump(t, g), want))
		}
		g.Close()
	}
}
