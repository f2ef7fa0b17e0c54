package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// writeBigKeys writes count keys of size bytes each through the leader,
// eight callers at once, riding out leader changes.
func writeBigKeys(t *testing.T, c *nodetest.Cluster, prefix string, count, size int) {
	t.Helper()
	val := []byte(strings.Repeat("x", size))
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := w; i < count; i += 8 {
				for {
					_, leader := c.WaitLeader(30 * time.Second)
					_, err := leader.KV().SetIfAbsent(ctx, fmt.Sprintf("%s%05d", prefix, i), val, 0)
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						failed.Store(err)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}(w)
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
}

// A far-behind follower receives a slow snapshot install (its link limited
// to 1 MB/s) and a snapshot is forced on it while the install streams.
// Raft's snapshot thread then holds an FSMSnapshot while it waits for the
// main thread, and the main thread, once the stream is in, waits for the
// install's Restore: no hang, the follower converges and stops in bounded
// time.
func TestSnapshotAndInstallRacingDoNotHang(t *testing.T) {
	lp := newLinkProxies(t)
	restored := make([]atomic.Uint64, 3)
	c := nodetest.Start(t, 3, func(i int, cfg *node.Config) {
		frequentSnapshots(i, cfg)
		lp.mutate(i, cfg)
	}, nil, func(i int, n *node.Node) {
		n.FSM().SetRestoreListener(func(applied uint64) { restored[i].Store(applied) })
	})
	writeBigKeys(t, c, "early:", 200, 1000)
	fi, f := c.Follower()
	// The follower has applied entries past its last snapshot, so a
	// forced snapshot has something to take.
	waitFor(t, "the follower to take a snapshot", 30*time.Second, func() bool { return stat(f, "last_snapshot_index") > 0 })
	writeBigKeys(t, c, "unsnapped:", 10, 10)
	waitFor(t, "the follower to apply past its snapshot", 30*time.Second, func() bool {
		return stat(f, "applied_index") > stat(f, "last_snapshot_index")
	})
	lp.isolate(fi, true)
	behind := stat(f, "last_log_index")
	// Enough state that the install streams for seconds: ~4 MB.
	for batch := 0; ; batch++ {
		writeBigKeys(t, c, fmt.Sprintf("late%d:", batch), 1000, 4000)
		_, leader := c.WaitLeader(10 * time.Second)
		if snap := stat(leader, "last_snapshot_index"); snap > behind+64 {
			break
		}
		if batch > 5 {
			t.Fatal("leader never compacted past the cut-off follower")
		}
	}
	li, _ := c.WaitLeader(10 * time.Second)
	slow := `{"name":"slow","type":"bandwidth","stream":"upstream","toxicity":1,"attributes":{"rate":1000}}`
	if _, err := lp.p[[2]int{li, fi}].Toxics.AddToxicJson(strings.NewReader(slow)); err != nil {
		t.Fatal(err)
	}
	lp.isolate(fi, false)

	// Force a snapshot once the install is being written.
	snapDir := filepath.Join(c.Configs[fi].DataDir, "raft", "snapshots")
	installing := func() bool {
		entries, _ := os.ReadDir(snapDir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				return true
			}
		}
		return false
	}
	forced := make(chan error, 1)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if installing() {
			go func() { forced <- f.Raft().Snapshot().Error() }()
			break
		}
		if restored[fi].Load() != 0 || time.Now().After(deadline) {
			t.Fatalf("never saw the install in progress (restored at %d)", restored[fi].Load())
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for restored[fi].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("follower was not restored by the install within 90 s (applied %d): hung?", f.FSM().Applied())
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-forced:
		t.Logf("install restored index %d; the snapshot forced during it: %v", restored[fi].Load(), err)
	case <-time.After(60 * time.Second):
		t.Fatal("the snapshot forced during the install never finished")
	}
	lp.p[[2]int{li, fi}].Toxics.RemoveToxic(context.Background(), "slow")
	writeBigKeys(t, c, "after:", 100, 100)
	c.AssertIdentical(60 * time.Second)
	stopped := make(chan struct{})
	go func() { c.StopNode(fi); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not stop within 30 s")
	}
}

// A torn newest snapshot (a power cut on the SD card while it was being
// written, say) is detected by the snapshot store's checksum and the node
// rebuilds from the older one plus the log.
func TestTornNewestSnapshotIsSkippedForAnOlderOne(t *testing.T) {
	restored := make([]atomic.Uint64, 3)
	c := nodetest.Start(t, 3, func(i int, cfg *node.Config) {
		frequentSnapshots(i, cfg)
		cfg.Raft.TrailingLogs = 100000 // the older snapshot's successors stay in the log
	}, nil, func(i int, n *node.Node) {
		n.FSM().SetRestoreListener(func(applied uint64) { restored[i].Store(applied) })
	})
	fi, _ := c.Follower()
	snapDir := filepath.Join(c.Configs[fi].DataDir, "raft", "snapshots")
	snapshots := func() []string {
		entries, _ := os.ReadDir(snapDir)
		var names []string
		for _, e := range entries {
			if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
				names = append(names, e.Name())
			}
		}
		// term-index-millis: newest last.
		sort.Slice(names, func(a, b int) bool { return snapshotIndex(t, names[a]) < snapshotIndex(t, names[b]) })
		return names
	}
	for batch := 0; len(snapshots()) < 2; batch++ {
		if batch > 50 {
			t.Fatalf("follower kept %d snapshots, want 2", len(snapshots()))
		}
		writeManyKeys(t, c.Nodes[fi], fmt.Sprintf("k%d:", batch), 100)
		time.Sleep(200 * time.Millisecond)
	}
	c.StopNode(fi)
	names := snapshots()
	newest, older := names[len(names)-1], names[len(names)-2]
	olderIndex := snapshotIndex(t, older)
	// Tear the newest state file: its second half is lost.
	state := filepath.Join(snapDir, newest, "state.bin")
	st, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(state, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(state, st.Size()); err != nil { // same size, zeros
		t.Fatal(err)
	}
	// The derived files are gone too, so the node must restore a snapshot.
	for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal", "domain.sqlite-shm"} {
		os.Remove(filepath.Join(c.Configs[fi].DataDir, "fsm", name))
	}
	writeManyKeys(t, c.Nodes[(fi+1)%3], "more:", 20)
	n := c.StartNode(fi)
	if got := restored[fi].Load(); got != olderIndex {
		t.Fatalf("node restored index %d at start, want the older snapshot's %d (newest %s torn)", got, olderIndex, newest)
	}
	c.AssertIdentical(30 * time.Second)
	for _, k := range []string{"k0:0000", "more:0019"} {
		if _, ok, _ := n.KV().Get(k); !ok {
			t.Fatalf("rebuilt node misses %s", k)
		}
	}
}

// snapshotIndex reads the index from a snapshot directory name
// (term-index-millis).
func snapshotIndex(t *testing.T, name string) uint64 {
	t.Helper()
	var term, index, ms uint64
	if _, err := fmt.Sscanf(name, "%d-%d-%d", &term, &index, &ms); err != nil {
		t.Fatalf("snapshot dir %q: %v", name, err)
	}
	return index
}
