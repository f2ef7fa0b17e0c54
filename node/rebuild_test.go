package node_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// writeKeysVia writes count keys through via(i) (node i's index, or -1 for
// the current leader), four callers at once, riding out leader changes on
// a busy machine: a retry after an unknown outcome finds the key set.
func writeKeysVia(t *testing.T, c *nodetest.Cluster, via int, prefix string, count int) {
	t.Helper()
	writeKeysRetrying(t, 4, prefix, count, func() *node.Node {
		if via >= 0 {
			return c.Nodes[via]
		}
		for _, m := range c.Nodes {
			if m != nil && m.IsLeader() {
				return m
			}
		}
		return nil
	})
}

// compactedFollower starts a cluster that snapshots often, writes enough
// that a follower's log is compacted past index 1, and returns the
// follower's index after writing and converging.
func compactedFollower(t *testing.T) (*nodetest.Cluster, int) {
	t.Helper()
	c := nodetest.Start(t, 3, frequentSnapshots, nil, nil)
	fi, _ := c.Follower()
	for batch := 0; stat(c.Nodes[fi], "last_snapshot_index") < 300; batch++ {
		if batch > 40 {
			t.Fatalf("follower's snapshot index stays at %d", stat(c.Nodes[fi], "last_snapshot_index"))
		}
		writeKeysVia(t, c, -1, fmt.Sprintf("k%d:", batch), 100)
		time.Sleep(200 * time.Millisecond)
	}
	c.AssertIdentical(60 * time.Second)
	return c, fi
}

// ruinSnapshots makes every snapshot of a stopped node fail its checksum
// (the second half of each state.bin zeroed, like a torn write), deletes
// its fsm/ and checks that its log no longer starts at 1. It returns the
// snapshots' names.
func ruinSnapshots(t *testing.T, cfg node.Config) []string {
	t.Helper()
	snapDir := filepath.Join(cfg.DataDir, "raft", "snapshots")
	entries, err := os.ReadDir(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		state := filepath.Join(snapDir, e.Name(), "state.bin")
		st, err := os.Stat(state)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(state, st.Size()/2); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(state, st.Size()); err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		t.Fatal("the follower has no snapshot to tear")
	}
	if err := os.RemoveAll(filepath.Join(cfg.DataDir, "fsm")); err != nil {
		t.Fatal(err)
	}
	store, err := raftboltdb.NewBoltStore(filepath.Join(cfg.DataDir, "raft", "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := store.FirstIndex()
	store.Close()
	if err != nil || first <= 1 {
		t.Fatalf("log first index %d (%v): the test needs a compacted log", first, err)
	}
	return names
}

// checkSetAside checks that the torn snapshots were kept aside.
func checkSetAside(t *testing.T, cfg node.Config, names []string) {
	t.Helper()
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft", "snapshots-unusable", name, "state.bin")); err != nil {
			t.Errorf("torn snapshot %s not kept aside: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft", "snapshots", name)); err == nil {
			t.Errorf("torn snapshot %s still in the store", name)
		}
	}
}

// waitReady waits for n's readiness (bounded, generous for a busy box).
func waitReady(t *testing.T, n *node.Node, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !n.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("node not ready within %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// takesWrites writes through the rebuilt node and checks every replica
// converges to the same bytes and holds old and new keys.
func takesWrites(t *testing.T, c *nodetest.Cluster, fi int) {
	t.Helper()
	writeKeysVia(t, c, fi, "after:", 40)
	c.AssertIdentical(60 * time.Second)
	for _, k := range []string{"k0:0000", "more:0019", "after:0039"} {
		if _, ok, _ := c.Nodes[fi].KV().Get(k); !ok {
			t.Fatalf("rebuilt node misses %s", k)
		}
	}
}

// A follower whose every snapshot is torn, whose fsm/ is gone and whose
// log is compacted past index 1 fetches a snapshot from a peer at start,
// becomes ready, converges and takes writes (no crash loop, no rm).
func TestNoUsableSnapshotRebuildsFromPeer(t *testing.T) {
	c, fi := compactedFollower(t)
	c.StopNode(fi)
	names := ruinSnapshots(t, c.Configs[fi])
	writeKeysVia(t, c, (fi+1)%3, "more:", 20)

	start := time.Now()
	n := c.StartNode(fi)
	started := time.Since(start)
	waitReady(t, n, 60*time.Second)
	t.Logf("restart to ready: %v (Start returned after %v)", time.Since(start), started)
	checkSetAside(t, c.Configs[fi], names)
	takesWrites(t, c, fi)
}

// The same with no peer reachable at first (the whole store lost power):
// the box waits, serving nothing, and rebuilds when a peer comes up.
func TestNoUsableSnapshotWaitsForAPeer(t *testing.T) {
	c, fi := compactedFollower(t)
	c.StopAll()
	names := ruinSnapshots(t, c.Configs[fi])

	ctx, cancel := context.WithCancel(context.Background())
	nd, err := node.New(c.Configs[fi], node.Options{Logger: nodetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- nd.StartContext(ctx) }()
	// Stop the waiting start (and the node) if the test ends early.
	t.Cleanup(func() {
		cancel()
		<-done
		nd.Stop()
	})
	select {
	case err := <-done:
		done <- err
		t.Fatalf("start returned with no peer up: %v", err)
	case <-time.After(3 * time.Second):
	}
	// Never serve before the replica is rebuilt.
	if conn, err := net.DialTimeout("tcp", c.Configs[fi].HTTPAddr, time.Second); err == nil {
		conn.Close()
		t.Fatal("the box serves HTTP while it waits for a peer")
	}

	peer := (fi + 1) % 3
	c.StartNode(peer)
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("start after a peer came up: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the box did not rebuild within 90 s of a peer coming up")
	}
	c.Nodes[fi] = nd
	waitReady(t, nd, 60*time.Second)
	t.Logf("restart to ready: %v (no peer for the first 3 s)", time.Since(start))
	checkSetAside(t, c.Configs[fi], names)
	c.StartNode(3 - fi - peer)
	writeKeysVia(t, c, peer, "more:", 20)
	takesWrites(t, c, fi)
}
