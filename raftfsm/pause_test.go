package raftfsm

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	berrors "go.etcd.io/bbolt/errors"
)

// The tests of pause.go: one per class of Classify, each against the
// real failure where one can be made without root (SQLite's page limit
// gives a genuine SQLITE_FULL, bbolt's size limit a genuine failure of
// the second commit), asserting that the replica ends identical to one
// that never failed.

const (
	pcmdSet  CommandType = 60
	pcmdFlip CommandType = 61 // fails with flipErr while it is set
)

var flipErr atomic.Pointer[error]

type pset struct{ K, V string }

func pauseRegistry() *Registry {
	reg := NewRegistry()
	reg.Register(pcmdSet, "ptest.set", func(ctx *ApplyContext, p []byte) ([]byte, error) {
		var c pset
		if err := json.Unmarshal(p, &c); err != nil {
			return nil, nil
		}
		b, err := ctx.Bolt.CreateBucketIfNotExists([]byte("p"))
		if err != nil {
			return nil, err
		}
		if err := b.Put([]byte(c.K), []byte(c.V)); err != nil {
			return nil, err
		}
		if _, err := ctx.SQL.Exec(`INSERT INTO items(k, v) VALUES(?,?)`, c.K, c.V); err != nil {
			return nil, err
		}
		return []byte(c.K), nil
	})
	reg.Register(pcmdFlip, "ptest.flip", func(ctx *ApplyContext, p []byte) ([]byte, error) {
		if e := flipErr.Load(); e != nil && *e != nil {
			return nil, *e
		}
		_, err := ctx.SQL.Exec(`UPDATE counter SET n = n + 1`)
		return nil, err
	})
	return reg
}

func openPaused(t *testing.T, dir string, src Source) *FSM {
	t.Helper()
	f, err := Open(Options{Dir: dir, Registry: pauseRegistry(), Migrate: func(tx *sql.Tx) error {
		for _, s := range []string{
			`CREATE TABLE IF NOT EXISTS items (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS counter (n INTEGER NOT NULL)`,
			`INSERT INTO counter(n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM counter)`,
		} {
			if _, err := tx.Exec(s); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if src != nil {
		f.SetSource(src)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// memSource is a Raft log in memory and, once set, one snapshot.
type memSource struct {
	*raft.InmemStore
	snapIndex uint64
	snap      []byte
}

func (s *memSource) LatestSnapshot() (uint64, io.ReadCloser, error) {
	if s.snap == nil {
		return 0, nil, nil
	}
	return s.snapIndex, io.NopCloser(bytes.NewReader(s.snap)), nil
}

func psetLog(i uint64, size int) *raft.Log {
	p, _ := json.Marshal(pset{K: fmt.Sprintf("k%06d", i), V: strings.Repeat("x", size)})
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: Command{Type: pcmdSet, Version: 1, FSMTime: int64(i), Payload: p}.Encode()}
}

func flipLog(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: Command{Type: pcmdFlip, Version: 1, FSMTime: int64(i)}.Encode()}
}

// feed stores logs in the source (as Raft does before applying) and
// hands them to the FSM; it returns the responses' errors.
func feed(t *testing.T, f *FSM, src *memSource, logs ...*raft.Log) []error {
	t.Helper()
	if src != nil {
		if err := src.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	for _, x := range f.ApplyBatch(logs) {
		errs = append(errs, x.(Response).Err)
	}
	return errs
}

func waitResumed(t *testing.T, f *FSM) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for f.Paused() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("still paused after 20 s: %v", f.Paused())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.Halted(); err != nil {
		t.Fatalf("halted instead of resuming: %v", err)
	}
}

func pdump(t *testing.T, f *FSM) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.Dump(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reference applies logs on a fresh FSM that never fails.
func reference(t *testing.T, logs []*raft.Log) *FSM {
	t.Helper()
	old := flipErr.Swap(nil)
	defer flipErr.Store(old)
	r := openPaused(t, t.TempDir(), nil)
	for _, l := range logs {
		r.ApplyBatch([]*raft.Log{l})
	}
	return r
}

func TestClassifyDecidesOnce(t *testing.T) {
	pathErr := func(e syscall.Errno) error {
		return fmt.Errorf("index 7: apply x: %w", &fs.PathError{Op: "write", Path: "fsm.bolt", Err: e})
	}
	for _, c := range []struct {
		err  error
		want Class
	}{
		{pathErr(syscall.ENOSPC), ClassFull},
		{pathErr(syscall.EDQUOT), ClassFull},
		{pathErr(syscall.EFBIG), ClassFull},
		{berrors.ErrMaxSizeReached, ClassFull},
		{pathErr(syscall.EROFS), ClassReadOnly},
		{pathErr(syscall.EIO), ClassIO},
		{&tornCommit{pathErr(syscall.ENOSPC)}, ClassIO}, // after SQLite committed: the files disagree
		{damaged(boltFile, "torn"), ClassIO},
		{errors.New("command type 9 is unknown to this version: upgrade this node"), ClassHalt},
		{nil, ClassHalt},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// A real SQLITE_FULL (the page limit reached mid-batch) pauses; more
// entries arrive while paused; once there is room the FSM catches up from
// the log and ends identical to a replica that never failed.
func TestFullSQLitePausesThenCatchesUpFromTheLog(t *testing.T) {
	src := &memSource{InmemStore: raft.NewInmemStore()}
	f := openPaused(t, t.TempDir(), src)
	var all []*raft.Log
	for i := uint64(1); i <= 5; i++ {
		all = append(all, psetLog(i, 100))
	}
	for _, e := range feed(t, f, src, all...) {
		if e != nil {
			t.Fatal(e)
		}
	}
	var pages int
	if err := f.sqlW.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sqlW.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	i := uint64(6)
	for ; f.Paused() == nil && i < 200; i++ {
		l := psetLog(i, 3000)
		all = append(all, l)
		feed(t, f, src, l)
	}
	p := f.Paused()
	if p == nil || p.Class != ClassFull || !errors.Is(f.Halted(), ErrPaused) || !errors.Is(f.Halted(), ErrHalted) {
		t.Fatalf("after filling SQLite: paused %v, halted %v; want a ClassFull pause", p, f.Halted())
	}
	if f.Applied() >= i-1 {
		t.Fatalf("applied %d: the failed entry counts as applied", f.Applied())
	}
	if _, err := f.Capture(); err == nil {
		t.Fatal("a paused FSM gave a snapshot (its log would be compacted past what it owes)")
	}
	// Raft goes on handing entries over while paused.
	for j := i; j < i+10; j++ {
		l := psetLog(j, 10)
		all = append(all, l)
		for _, e := range feed(t, f, src, l) {
			if !errors.Is(e, ErrPaused) {
				t.Fatalf("entry %d while paused answered %v", j, e)
			}
		}
	}
	// Room again.
	f.mu.RLock()
	f.applyMu.Lock()
	_, err := f.sqlW.Exec(`PRAGMA max_page_count = 1073741823`)
	f.applyMu.Unlock()
	f.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	waitResumed(t, f)
	last := all[len(all)-1].Index
	if f.Applied() != last {
		t.Fatalf("applied %d after resuming, want %d", f.Applied(), last)
	}
	// Applying goes on where Raft is.
	l := psetLog(last+1, 10)
	all = append(all, l)
	if e := feed(t, f, src, l)[0]; e != nil {
		t.Fatal(e)
	}
	if got, want := pdump(t, f), pdump(t, reference(t, all)); got != want {
		t.Fatal("the resumed replica differs from one that never failed")
	}
}

// bbolt refusing to grow after SQLite committed leaves the files at two
// indexes: the FSM reopens through the repair path (sets both aside,
// rebuilds from the newest snapshot and the log, which was compacted past
// the snapshot as on a box that has run a while) and ends identical.
func TestTornCommitReopensThroughRepairFromSnapshotAndLog(t *testing.T) {
	src := &memSource{InmemStore: raft.NewInmemStore()}
	dir := t.TempDir()
	f := openPaused(t, dir, src)
	var all []*raft.Log
	for i := uint64(1); i <= 40; i++ {
		all = append(all, psetLog(i, 200))
	}
	for _, l := range all {
		feed(t, f, src, l)
	}
	// A snapshot at 30, and the log compacted to start after it.
	ref := reference(t, all[:30])
	var snap bytes.Buffer
	if err := ref.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	src.snap, src.snapIndex = snap.Bytes(), 30
	if err := src.DeleteRange(1, 30); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, boltFile))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.bolt.MaxSize = int(st.Size())
	f.mu.Unlock()
	i := uint64(41)
	for ; f.Paused() == nil && i < 400; i++ {
		l := psetLog(i, 4000)
		all = append(all, l)
		feed(t, f, src, l)
	}
	if p := f.Paused(); p == nil || p.Class != ClassIO {
		t.Fatalf("paused %v after bbolt could not grow; want a ClassIO pause", p)
	}
	waitResumed(t, f)
	if f.Repaired() == nil {
		t.Fatal("the files were not set aside through the repair path")
	}
	if got, want := pdump(t, f), pdump(t, reference(t, all)); got != want {
		t.Fatal("the repaired replica differs from one that never failed")
	}
}

// A read-only file system pauses; the write that works again resumes.
func TestReadOnlyPausesUntilWritesWork(t *testing.T) {
	src := &memSource{InmemStore: raft.NewInmemStore()}
	f := openPaused(t, t.TempDir(), src)
	var all []*raft.Log
	ro := error(&fs.PathError{Op: "write", Path: "domain.sqlite-wal", Err: syscall.EROFS})
	flipErr.Store(&ro)
	defer flipErr.Store(nil)
	for i := uint64(1); i <= 3; i++ {
		all = append(all, flipLog(i))
		feed(t, f, src, all[len(all)-1])
	}
	if p := f.Paused(); p == nil || p.Class != ClassReadOnly {
		t.Fatalf("paused %v, want ClassReadOnly", p)
	}
	time.Sleep(300 * time.Millisecond) // retries fail meanwhile
	if f.Paused() == nil {
		t.Fatal("resumed while writes still fail")
	}
	flipErr.Store(nil)
	waitResumed(t, f)
	if f.Applied() != 3 {
		t.Fatalf("applied %d, want 3", f.Applied())
	}
	if got, want := pdump(t, f), pdump(t, reference(t, all)); got != want {
		t.Fatal("the resumed replica differs")
	}
}

// Anything that is not a storage failure still halts, source or not.
func TestNonStorageFailureStillHalts(t *testing.T) {
	src := &memSource{InmemStore: raft.NewInmemStore()}
	f := openPaused(t, t.TempDir(), src)
	bad := errors.New("disk on fire")
	flipErr.Store(&bad)
	defer flipErr.Store(nil)
	feed(t, f, src, flipLog(1))
	if f.Paused() != nil || f.Halted() == nil || errors.Is(f.Halted(), ErrPaused) {
		t.Fatalf("paused %v, halted %v: want a halt", f.Paused(), f.Halted())
	}
}
