package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// frequentSnapshots makes Raft snapshot and compact its log often.
func frequentSnapshots(_ int, c *node.Config) {
	c.Raft.SnapshotThreshold = 64
	c.Raft.TrailingLogs = 32
	c.Raft.SnapshotInterval = node.Duration{Duration: 100 * time.Millisecond}
}

func stat(n *node.Node, key string) uint64 {
	v, _ := strconv.ParseUint(n.Raft().Stats()[key], 10, 64)
	return v
}

// writeManyKeys writes count keys through n with a few callers at once.
func writeManyKeys(t *testing.T, n *node.Node, prefix string, count int) {
	t.Helper()
	writeKeysRetrying(t, 8, prefix, count, func() *node.Node { return n })
}

// writeKeysRetrying writes count keys, each through the node via picks at that
// moment (nil: none yet), from workers callers at once. A leader change on
// a busy machine is not what these tests are about: a failed write is
// retried (a retry after an unknown outcome finds the key set, which is all
// the tests need).
func writeKeysRetrying(t *testing.T, workers int, prefix string, count int, via func() *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < count; i += workers {
				for {
					err := fmt.Errorf("no leader")
					if n := via(); n != nil {
						_, err = n.KV().SetIfAbsent(ctx, fmt.Sprintf("%s%04d", prefix, i), []byte("v"), 0)
					}
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						errs <- fmt.Errorf("write %s%04d: %w", prefix, i, err)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A node that was down while the others compacted their logs past its last
// entry is brought up by a snapshot install, and ends byte-for-byte equal.
func TestFarBehindNodeCatchesUpBySnapshotInstall(t *testing.T) {
	restored := make([]atomic.Uint64, 3)
	c := nodetest.Start(t, 3, frequentSnapshots, nil, func(i int, n *node.Node) {
		n.FSM().SetRestoreListener(func(applied uint64) { restored[i].Store(applied) })
	})
	_, leader := c.WaitLeader(5 * time.Second)
	writeManyKeys(t, leader, "early:", 20)
	fi, f := c.Follower()
	behind := stat(f, "last_log_index")
	c.StopNode(fi)

	// Write until the leader's log no longer holds what the stopped node
	// needs next: its first index is the snapshot index minus the trailing
	// logs kept.
	deadline := time.Now().Add(20 * time.Second)
	batch := 0
	for {
		_, leader = c.WaitLeader(5 * time.Second)
		writeManyKeys(t, leader, fmt.Sprintf("late%d:", batch), 100)
		batch++
		snap := stat(leader, "last_snapshot_index")
		if snap > 32 && snap-32 > behind+1 {
			t.Logf("leader snapshot at %d, log kept from about %d; stopped node has up to %d", snap, snap-32, behind)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader never compacted past %d (snapshot index %d)", behind, snap)
		}
	}

	n := c.StartNode(fi)
	deadline = time.Now().Add(15 * time.Second)
	for restored[fi].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("restarted node was not restored from a snapshot (applied %d, leader %d)", n.FSM().Applied(), leader.FSM().Applied())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The FSM's restore runs before Raft records the installed snapshot
	// in its stats, so on a loaded machine the index may lag a moment.
	deadline = time.Now().Add(15 * time.Second)
	for stat(n, "last_snapshot_index") <= behind {
		if time.Now().After(deadline) {
			t.Fatalf("restarted node's last snapshot index %d, want past %d", stat(n, "last_snapshot_index"), behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("restarted node restored from a snapshot at applied index %d; its snapshot store has %d", restored[fi].Load(), stat(n, "last_snapshot_index"))
	c.AssertIdentical(10 * time.Second)
	for _, k := range []string{"early:0000", fmt.Sprintf("late%d:0099", batch-1)} {
		if _, ok, _ := n.KV().Get(k); !ok {
			t.Fatalf("restarted node misses %s", k)
		}
	}
}

// A node whose FSM files are lost (a corrupt SD card partition, say) but
// whose Raft log and snapshots survive rebuilds the FSM from its newest
// snapshot and log at start.
func TestLostFSMFilesRebuiltFromSnapshotAndLog(t *testing.T) {
	c := nodetest.Start(t, 3, frequentSnapshots, nil, nil)
	_, leader := c.WaitLeader(5 * time.Second)
	writeManyKeys(t, leader, "k:", 300)
	fi, f := c.Follower()
	waitFor(t, "the follower to take a snapshot", 10*time.Second, func() bool { return stat(f, "last_snapshot_index") > 0 })
	c.StopNode(fi)
	for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal", "domain.sqlite-shm"} {
		if err := os.Remove(filepath.Join(c.Configs[fi].DataDir, "fsm", name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	_, leader = c.WaitLeader(5 * time.Second)
	writeManyKeys(t, leader, "more:", 20)
	n := c.StartNode(fi)
	c.AssertIdentical(10 * time.Second)
	if _, ok, _ := n.KV().Get("k:0000"); !ok {
		t.Fatal("rebuilt node misses k:0000")
	}
}

// FSM files ahead of everything the box holds durably (its raft/ lost or
// replaced, fsm/ kept) describe another history: the node must drop them
// and rebuild, not skip the new log's first entries as "already applied".
func TestFSMAheadOfTheLogIsRebuilt(t *testing.T) {
	c := nodetest.Start(t, 1, nil, nil, nil)
	_, n := c.WaitLeader(5 * time.Second)
	writeManyKeys(t, n, "old:", 40)
	c.StopNode(0)
	raftDir := filepath.Join(c.Configs[0].DataDir, "raft")
	if err := os.Rename(raftDir, raftDir+".lost"); err != nil {
		t.Fatal(err)
	}
	c.StartNode(0)
	_, n = c.WaitLeader(10 * time.Second)
	if _, err := n.KV().SetIfAbsent(context.Background(), "new:1", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if old, err := n.KV().List("old:", 100); err != nil || len(old) != 0 {
		t.Fatalf("the files of the lost history are still served: %d keys, %v", len(old), err)
	}
	if _, ok, err := n.KV().Get("new:1"); !ok || err != nil {
		t.Fatalf("a write of the new history is missing: %v %v", ok, err)
	}
	// The two counters are read one after the other while the leader's own
	// commands (expiry, the first stamp) go on: they must meet, not skip.
	var got, want uint64
	waitFor(t, "the FSM's applied index to be raft's", 10*time.Second, func() bool {
		got, want = n.FSM().Applied(), stat(n, "applied_index")
		return got == want
	})
}
