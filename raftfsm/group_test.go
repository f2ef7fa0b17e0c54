package raftfsm_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

func openGrouped(t *testing.T, dir string, g raftfsm.Grouping) *raftfsm.FSM {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: testRegistry(), Migrate: migrate, Grouping: g})
	if err != nil {
		t.Fatalf("open fsm: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func applyOK(t *testing.T, f *raftfsm.FSM, logs ...*raft.Log) {
	t.Helper()
	for i, r := range f.ApplyBatch(logs) {
		if err := resp(t, r).Err; err != nil {
			t.Fatalf("entry %d: %v", logs[i].Index, err)
		}
	}
}

func itemCount(t *testing.T, f *raftfsm.FSM) int {
	t.Helper()
	var n int
	if err := f.Query(func(db *sql.DB) error { return db.QueryRow(`SELECT count(*) FROM items`).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

// Many batches go into one commit: nothing is visible until it, and a
// reader waiting for an index the group holds commits it at once.
func TestGroupCommitsManyBatchesOnceAndAWaiterCommitsIt(t *testing.T) {
	f := openGrouped(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	base := f.Commits()
	for i := uint64(1); i <= 10; i++ {
		applyOK(t, f, setEntry(i, int64(i)*10, fmt.Sprintf("k%d", i), "v"))
	}
	if f.Applied() != 0 || f.Commits() != base || itemCount(t, f) != 0 {
		t.Fatalf("before any reader: applied %d, commits %d, rows %d; want 0, %d, 0", f.Applied(), f.Commits(), itemCount(t, f), base)
	}
	if f.Handled() != 10 {
		t.Fatalf("handled %d, want 10", f.Handled())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.WaitApplied(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if f.Applied() != 10 || f.Now() != 100 || f.Commits() != base+1 || itemCount(t, f) != 10 {
		t.Fatalf("after the reader: applied %d now %d commits %d rows %d; want 10, 100, %d, 10", f.Applied(), f.Now(), f.Commits(), base+1, itemCount(t, f))
	}
}

// A reader waiting for an index not yet applied makes the batch that
// brings it commit at its end.
func TestGroupBatchCommitsForAWaitingReader(t *testing.T) {
	f := openGrouped(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- f.WaitApplied(ctx, 2)
	}()
	applyOK(t, f, setEntry(1, 10, "a", "v"))
	// Give the reader time to be counted before the entry it wants.
	time.Sleep(50 * time.Millisecond)
	applyOK(t, f, setEntry(2, 20, "b", "v"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.Applied() < 2 {
		t.Fatalf("applied %d, want 2", f.Applied())
	}
}

// The timer commits a group nobody asks for, and the entry bound commits a
// full one at once.
func TestGroupTimerAndSizeBoundCommit(t *testing.T) {
	f := openGrouped(t, t.TempDir(), raftfsm.Grouping{Delay: 20 * time.Millisecond})
	applyOK(t, f, setEntry(1, 10, "a", "v"))
	deadline := time.Now().Add(20 * time.Second)
	for f.Applied() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the timer never committed the group")
		}
		time.Sleep(5 * time.Millisecond)
	}

	g := openGrouped(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour, Entries: 3})
	applyOK(t, g, setEntry(1, 10, "a", "v"), setEntry(2, 20, "b", "v"))
	if g.Applied() != 0 {
		t.Fatalf("two of three entries: applied %d, want 0", g.Applied())
	}
	applyOK(t, g, setEntry(3, 30, "c", "v"))
	if g.Applied() != 3 {
		t.Fatalf("three of three entries: applied %d, want 3", g.Applied())
	}
}

// Close commits the open group; a snapshot (Capture) is taken of
// everything applied; a dump shows it.
func TestGroupCloseCaptureAndDumpSeeTheOpenGroup(t *testing.T) {
	dir := t.TempDir()
	f := openGrouped(t, dir, raftfsm.Grouping{Delay: time.Hour})
	applyOK(t, f, setEntry(1, 10, "a", "v"))
	c, err := f.Capture()
	if err != nil {
		t.Fatal(err)
	}
	if c.Index != 1 {
		t.Fatalf("capture at %d, want 1", c.Index)
	}
	c.Close()
	applyOK(t, f, setEntry(2, 20, "b", "v"))
	plain := openFSM(t, t.TempDir())
	applyOK(t, plain, setEntry(1, 10, "a", "v"))
	applyOK(t, plain, setEntry(2, 20, "b", "v"))
	if got, want := dump(t, f), dump(t, plain); string(got) != string(want) {
		t.Fatalf("grouped dump differs from per-batch dump:\n%s\n---\n%s", got, want)
	}
	applyOK(t, f, setEntry(3, 30, "c", "v"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := openFSM(t, dir)
	if g.Applied() != 3 {
		t.Fatalf("reopened at %d, want 3", g.Applied())
	}
}

// A batch that fails drops the whole open group, not only itself: the
// files never hold part of a group, and stay at the last commit.
func TestGroupFailedBatchDropsTheGroup(t *testing.T) {
	dir := t.TempDir()
	f := openGrouped(t, dir, raftfsm.Grouping{Delay: time.Hour})
	applyOK(t, f, setEntry(1, 10, "a", "v"))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	applyOK(t, f, setEntry(2, 20, "b", "v"))
	out := f.ApplyBatch([]*raft.Log{entry(3, raftfsm.Command{Type: cmdFail, Version: 1, FSMTime: 30})})
	if resp(t, out[0]).Err == nil || f.Halted() == nil {
		t.Fatal("a failing handler must halt")
	}
	if f.Applied() != 1 {
		t.Fatalf("applied %d after the failed group, want 1", f.Applied())
	}
	f.Close()
	g := openFSM(t, dir)
	if g.Applied() != 1 || itemCount(t, g) != 1 {
		t.Fatalf("reopened at %d with %d rows, want 1 and 1", g.Applied(), itemCount(t, g))
	}
}

// Restore replaces an open group with the snapshot.
func TestGroupRestoreDropsTheOpenGroup(t *testing.T) {
	src := openFSM(t, t.TempDir())
	applyOK(t, src, setEntry(1, 10, "a", "v"), setEntry(2, 20, "b", "v"))
	var b bytes.Buffer
	if err := src.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	snap := io.NopCloser(&b)

	f := openGrouped(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	applyOK(t, f, setEntry(1, 10, "x", "v"))
	if err := f.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if f.Applied() != 2 || f.Handled() != 2 {
		t.Fatalf("restored: applied %d handled %d, want 2 and 2", f.Applied(), f.Handled())
	}
	applyOK(t, f, setEntry(3, 30, "c", "v"))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	applyOK(t, src, setEntry(3, 30, "c", "v"))
	if got, want := dump(t, f), dump(t, src); string(got) != string(want) {
		t.Fatalf("after restore and one more entry the replicas differ:\n%s\n---\n%s", got, want)
	}
}

// The estimate of FSM time (NowAt: now + time since at) never goes back:
// a command stamped before the election that came after it (its leader
// stopped) is applied late with an old stamp, and a box that took that
// stamp as of now would stretch every TTL by the election.
func TestFSMClockEstimateNeverGoesBack(t *testing.T) {
	f := openFSM(t, t.TempDir())
	estimate := func() int64 {
		now, at := f.NowAt()
		return now + time.Since(at).Milliseconds()
	}
	applyOK(t, f, setEntry(1, 1_000_000, "a", "1"))
	time.Sleep(300 * time.Millisecond)
	before := estimate()
	if before < 1_000_000+300 {
		t.Fatalf("estimate %d 300 ms after a stamp of 1000000", before)
	}
	// Stamped 100 ms after the first, applied 300 ms after it.
	applyOK(t, f, setEntry(2, 1_000_100, "b", "2"))
	if now, _ := f.NowAt(); now != 1_000_100 {
		t.Fatalf("FSM time %d, want the stamp 1000100", now)
	}
	if after := estimate(); after < before {
		t.Fatalf("estimate went back from %d to %d on a late-applied command", before, after)
	}
	// A fresh stamp ahead of the estimate is taken as of now.
	fresh := estimate() + 5_000
	applyOK(t, f, setEntry(3, fresh, "c", "3"))
	if e := estimate(); e < fresh || e > fresh+1_000 {
		t.Fatalf("estimate %d after a stamp of %d", e, fresh)
	}
}
