package cloudsync

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
)

// Figures (run with -v to see them): how long a change takes to become a
// visible document, and how long 1,000 pending changes take to catch up.

// TestSyncLag adds 200 changes one at a time (each one waits for the
// previous one to be visible) and measures, per change, from the moment it
// is in the outbox (and Notify is called) to
//   - the write acknowledged by Firestore and the row marked synced, and
//   - the document seen by a real-time listener on the collection.
func TestSyncLag(t *testing.T) {
	if testing.Short() {
		t.Skip("figures; skipped with -short")
	}
	emu := sharedEmulator(t)
	shop := testShop(t)
	ob := newMemOutbox()
	r := startSyncer(t, testConfig(emu.HostPort(), shop), ob)

	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	seen := listen(t, rd, shop)

	// Warm up the JVM and both connections.
	for id := int64(1000); id < 1020; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "warm", "T0", "ACCEPTED"))
		r.s.Notify()
		seen.wait(t, id)
	}

	const n = 200
	visible := make([]time.Duration, 0, n)
	acked := make([]time.Duration, 0, n)
	for i := range n {
		id := int64(i + 1)
		status := []string{"ACCEPTED", "COOKING", "READY"}[i%3]
		seq := ob.add(id, OpUpsert, orderDoc(id, "s", "T1", status))
		r.s.Notify()
		at := seen.wait(t, id)
		ob.mu.Lock()
		added := ob.addedAt[seq]
		ob.mu.Unlock()
		visible = append(visible, at.Sub(added))
		eventually(t, 10*time.Second, "marked synced", func() bool { return ob.pending() == 0 })
		ob.mu.Lock()
		acked = append(acked, ob.markAt[seq].Sub(added))
		ob.mu.Unlock()
	}
	t.Logf("sync lag over %d changes, change in outbox -> document visible to a listener: %s", n, summary(visible))
	t.Logf("sync lag over %d changes, change in outbox -> written and marked synced:      %s", n, summary(acked))
	checkCollection(t, rd, shop, ob.expected(t))
}

// TestCatchUp1000 measures how long 1,000 changes pending while offline
// take to reach Firestore once the Syncer runs (default batch size).
func TestCatchUp1000(t *testing.T) {
	if testing.Short() {
		t.Skip("figures; skipped with -short")
	}
	emu := sharedEmulator(t)
	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")

	// Warm up the emulator's JVM with another shop first, so the figure is
	// about the Syncer, not about JIT compilation.
	warm := newMemOutbox()
	for id := int64(1); id <= 300; id++ {
		warm.add(id, OpUpsert, orderDoc(id, "warm", "T0", "ACCEPTED"))
	}
	wr := startSyncer(t, testConfig(emu.HostPort(), testShop(t)), warm)
	eventually(t, 60*time.Second, "warm-up drained", func() bool { return warm.pending() == 0 })
	wr.stop(t)

	for _, batch := range []int{DefaultBatchSize, MaxBatchSize} {
		shop := testShop(t)
		ob := newMemOutbox()
		for id := int64(1); id <= 1000; id++ {
			ob.add(id, OpUpsert, orderDoc(id, "s"+strconv.FormatInt(id/4, 10), "T"+strconv.FormatInt(id%20, 10), "ACCEPTED"))
		}
		cfg := testConfig(emu.HostPort(), shop)
		cfg.BatchSize = batch
		start := time.Now()
		startSyncer(t, cfg, ob)
		eventually(t, 60*time.Second, "1,000 changes synced", func() bool { return ob.pending() == 0 })
		took := time.Since(start)
		t.Logf("catch-up of 1,000 pending changes (batch size %d): %v (%.0f changes/s)", batch, took.Round(time.Millisecond), 1000/took.Seconds())
		if got := len(readAll(t, rd, shop)); got != 1000 {
			t.Errorf("%d documents after catch-up, want 1000", got)
		}
	}
}

type sighting struct {
	id int64
	at time.Time
}

type listener struct {
	seen chan sighting
	mu   sync.Mutex
	err  error
}

// listen reports every document added or modified in the shop's collection.
// It returns once the listener has its initial snapshot.
func listen(t *testing.T, c *firestore.Client, shop string) *listener {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{seen: make(chan sighting, 1024)}
	it := c.Collection("shops/" + shop + "/orders").Snapshots(ctx)
	if _, err := it.Next(); err != nil {
		cancel()
		t.Fatalf("listener: initial snapshot: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			snap, err := it.Next()
			if err != nil {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
				return
			}
			now := time.Now()
			for _, ch := range snap.Changes {
				if ch.Kind == firestore.DocumentRemoved {
					continue
				}
				id, _ := strconv.ParseInt(ch.Doc.Ref.ID, 10, 64)
				select {
				case l.seen <- sighting{id, now}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait(); it.Stop() }) // Stop is not safe concurrently with Next
	return l
}

func (l *listener) wait(t *testing.T, id int64) time.Time {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-l.seen:
			if s.id == id {
				return s.at
			}
		case <-timeout:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("order %d never seen by the listener (listener error: %v)", id, l.err)
		}
	}
}

func summary(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("min %v, median %v, p90 %v, p99 %v, max %v",
		s[0].Round(10*time.Microsecond), q(0.5).Round(10*time.Microsecond), q(0.9).Round(10*time.Microsecond),
		q(0.99).Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond))
}
