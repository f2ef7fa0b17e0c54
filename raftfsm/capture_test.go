package raftfsm_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/raftfsm"
)

// within fails the test if fn does not return in d (a hang is a failure
// with a message, not a stuck test binary).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v", what, d)
	}
}

// Raft's snapshot thread holds the FSMSnapshot between Snapshot and Persist
// while it waits for the main thread, and the main thread may be waiting
// for a Restore: Restore must not wait for an unpersisted snapshot.
func TestRestoreDoesNotWaitForAnOpenSnapshot(t *testing.T) {
	src := openFSM(t, t.TempDir())
	fill(t, src, 1, 100)
	before := dump(t, src)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	other := openFSM(t, t.TempDir())
	fill(t, other, 1, 20)
	restoreWithin(t, src, other, "Restore beside an open snapshot")
	if !bytes.Equal(dump(t, src), dump(t, other)) {
		t.Fatal("restore did not replace the state")
	}
	// The open snapshot still persists the state it was taken at.
	var sink memSink
	within(t, 30*time.Second, "Persist after a Restore", func() {
		if err := snap.Persist(&sink); err != nil {
			t.Error(err)
		}
		snap.Release()
	})
	back := openFSM(t, t.TempDir())
	if err := back.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, back), before) {
		t.Fatal("the snapshot taken before the restore does not hold the state of then")
	}
}

// setItems applies count cmdSet entries from index from on, each with its
// own key (one bbolt key and one SQLite row per index).
func setItems(t *testing.T, f *raftfsm.FSM, from uint64, count int, value string) {
	var logs []*raft.Log
	for i := 0; i < count; i++ {
		idx := from + uint64(i)
		logs = append(logs, setEntry(idx, int64(1000+idx), fmt.Sprintf("k%08d", idx), value))
	}
	for _, x := range f.ApplyBatch(logs) {
		if r := x.(raftfsm.Response); r.Err != nil {
			t.Error(r.Err)
		}
	}
}

// A backup is taken from an HTTP handler while batches are applied: both
// files must be copied at one index, and that index is the one reported.
func TestCaptureHoldsBothFilesAtOneIndexWhileApplying(t *testing.T) {
	src := openFSM(t, t.TempDir())
	var stop atomic.Bool
	applying := make(chan struct{})
	go func() {
		defer close(applying)
		for from := uint64(1); from < 2000 && !stop.Load(); from += 7 {
			setItems(t, src, from, 7, "v")
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { stop.Store(true); <-applying }()

	seen := map[uint64]bool{}
	for i := 0; i < 20; i++ {
		select {
		case <-applying:
			i = 20 // the last capture, after the applies
		default:
		}
		c, err := src.Capture()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err = c.WriteTo(&b)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		dst := openFSM(t, t.TempDir())
		if err := dst.Restore(io.NopCloser(&b)); err != nil {
			t.Fatal(err)
		}
		if dst.Applied() != c.Index {
			t.Fatalf("capture claims index %d, restores at %d", c.Index, dst.Applied())
		}
		if ok, err := dst.Consistent(); !ok || err != nil {
			t.Fatalf("capture at %d: bbolt and SQLite disagree on the applied index (%v)", c.Index, err)
		}
		var rows, maxIdx int64
		dst.Query(func(db *sql.DB) error {
			return db.QueryRow(`SELECT count(*), COALESCE(max(idx),0) FROM items`).Scan(&rows, &maxIdx)
		})
		var keys int64
		dst.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(testBucket); b != nil {
				keys = int64(b.Stats().KeyN)
			}
			return nil
		})
		if rows != int64(c.Index) || keys != rows || uint64(maxIdx) != c.Index {
			t.Fatalf("capture at index %d holds %d SQLite rows (last idx %d) and %d bbolt keys; want %d of each",
				c.Index, rows, maxIdx, keys, c.Index)
		}
		seen[c.Index] = true
		dst.Close()
	}
	if len(seen) < 2 {
		t.Fatalf("applies did not run beside the captures (indexes %v)", seen)
	}
}

// stalledWriter takes limit bytes, then blocks until released: a backup
// reader whose laptop went to sleep.
type stalledWriter struct {
	limit   int
	n       int
	release chan struct{}
	stalled chan struct{}
	once    sync.Once
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		w.once.Do(func() { close(w.stalled) })
		<-w.release
		return 0, io.ErrClosedPipe
	}
	w.n += len(p)
	return len(p), nil
}

// A reader that stops after 64 KiB holds nothing the live files need:
// applies that grow (and so remap) the bbolt file go on, a Restore and
// a Close complete.
func TestStalledSnapshotReaderBlocksNothing(t *testing.T) {
	f := openFSM(t, t.TempDir())
	setItems(t, f, 1, 200, strings.Repeat("x", 2000))
	c, err := f.Capture()
	if err != nil {
		t.Fatal(err)
	}
	w := &stalledWriter{limit: 64 << 10, release: make(chan struct{}), stalled: make(chan struct{})}
	streamed := make(chan error, 1)
	go func() {
		_, err := c.WriteTo(w)
		streamed <- err
	}()
	defer func() { close(w.release); <-streamed; c.Close() }()
	select {
	case <-w.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("stream never reached its reader")
	}
	sizeBefore := f.Applied()
	// ~16 MB of bbolt values: the file grows through several remaps.
	within(t, 120*time.Second, "applies beside a stalled reader", func() {
		for i := uint64(0); i < 40; i++ {
			setItems(t, f, sizeBefore+1+i*100, 100, strings.Repeat("y", 4000))
		}
	})
	other := openFSM(t, t.TempDir())
	fill(t, other, 1, 10)
	restoreWithin(t, f, other, "Restore beside a stalled reader")
	within(t, 30*time.Second, "Close beside a stalled reader", func() { f.Close() })
}

// restoreWithin restores f from a snapshot of other, and fails the test
// (named what) when the Restore hangs.
func restoreWithin(t *testing.T, f, other *raftfsm.FSM, what string) {
	t.Helper()
	var snap bytes.Buffer
	if err := other.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, what, func() {
		if err := f.Restore(io.NopCloser(&snap)); err != nil {
			t.Error(err)
		}
	})
}
