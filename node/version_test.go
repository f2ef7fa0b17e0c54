package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/raftfsm"
)

const cmdNewFeature raftfsm.CommandType = 201

// Mixed versions during a rolling upgrade: node 2 runs the old version,
// which does not know cmdNewFeature. An ignorable command of that type is
// skipped there; a non-ignorable one stops node 2 from applying (it must
// not diverge) while the upgraded majority goes on.
func TestMixedVersionsUnknownCommand(t *testing.T) {
	c := nodetest.Start(t, 3, lanTimeouts, func(i int) node.Options {
		return node.Options{Register: func(reg *raftfsm.Registry) {
			if i == 2 {
				return // the old version
			}
			reg.Register(cmdNewFeature, "test.newFeature", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
				return []byte("done"), nil
			})
		}}
	}, nil)
	// Let an upgraded node lead, as an upgrade would.
	leader := leadElsewhere(t, c, 2)
	ctx := context.Background()
	old := c.Nodes[2]

	out, err := leader.Propose(ctx, node.Proposal{Type: cmdNewFeature, Version: 1, Flags: raftfsm.FlagIgnorable})
	if err != nil || string(out) != "done" {
		t.Fatalf("ignorable command on the leader = %q, %v", out, err)
	}
	c.WaitConverged(10 * time.Second)
	if err := old.FSM().Halted(); err != nil {
		t.Fatalf("old node halted on an ignorable command: %v", err)
	}

	if _, err := leader.Propose(ctx, node.Proposal{Type: cmdNewFeature, Version: 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for old.FSM().Halted() == nil {
		if time.Now().After(deadline) {
			t.Fatal("old node applied a command type it does not know")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if old.Ready() {
		t.Fatal("halted node reports ready")
	}
	if _, err := old.KV().SetIfAbsent(ctx, "k", []byte("v"), 0); !errors.Is(err, node.ErrHalted) {
		t.Fatalf("write through the halted node = %v, want ErrHalted", err)
	}
	// The upgraded majority keeps committing.
	if ok, err := leader.KV().SetIfAbsent(ctx, "k", []byte("v"), 0); err != nil || !ok {
		t.Fatalf("write on the upgraded majority = %v, %v", ok, err)
	}
}

// The old node halts on the new command; meanwhile the others go on and
// Raft snapshots. Once node 2 is upgraded and restarted it applies what it
// missed and ends identical: a halted node must not take snapshots of
// files that lag the index Raft labels them with.
func TestHaltedNodeCatchesUpAfterUpgrade(t *testing.T) {
	var upgraded atomic.Bool
	c := nodetest.Start(t, 3, frequentSnapshots, func(i int) node.Options {
		return node.Options{Register: func(reg *raftfsm.Registry) {
			if i == 2 && !upgraded.Load() {
				return
			}
			reg.Register(cmdNewFeature, "test.newFeature", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
				b, err := ctx.Bolt.CreateBucketIfNotExists([]byte("feature"))
				if err != nil {
					return nil, err
				}
				return nil, b.Put(p, []byte("on"))
			})
		}}
	}, nil)
	leader := leadElsewhere(t, c, 2)
	ctx := context.Background()
	old := c.Nodes[2]
	writeManyKeys(t, leader, "before:", 20)
	if _, err := leader.Propose(ctx, node.Proposal{Type: cmdNewFeature, Version: 1, Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for old.FSM().Halted() == nil {
		if time.Now().After(deadline) {
			t.Fatal("old node did not halt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	haltedAt := old.FSM().Applied()
	// Enough writes for several snapshots on every node.
	writeManyKeys(t, leader, "after:", 300)
	deadline = time.Now().Add(10 * time.Second)
	for stat(old, "last_log_index") < stat(leader, "last_log_index") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a few snapshot intervals
	t.Logf("old node halted at applied %d; its last snapshot index %d", haltedAt, stat(old, "last_snapshot_index"))

	c.StopNode(2)
	upgraded.Store(true)
	c.StartNode(2)
	c.AssertIdentical(15 * time.Second)
	if _, ok, _ := c.Nodes[2].KV().Get("after:0299"); !ok {
		t.Fatal("upgraded node misses a write made while it was halted")
	}
}

// leadElsewhere makes sure node old does not lead: if it does, the
// leadership goes to another node by name (never left to chance, so the
// test always runs) and that node is returned once it leads.
func leadElsewhere(t *testing.T, c *nodetest.Cluster, old int) *node.Node {
	t.Helper()
	li, leader := c.WaitLeader(10 * time.Second)
	if li != old {
		return leader
	}
	to := (old + 1) % len(c.Nodes)
	deadline := time.Now().Add(20 * time.Second)
	for !c.Nodes[to].IsLeader() {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not take the leadership from node %d", to, old)
		}
		if l := c.Nodes[old]; l.IsLeader() {
			// An error (a transfer already in progress) is retried.
			l.Raft().LeadershipTransferToServer(raft.ServerID(c.Configs[to].NodeID), raft.ServerAddress(c.Configs[to].RaftAddr)).Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.WaitLeader(10 * time.Second) // ready: it has applied its barrier
	return c.Nodes[to]
}

// The old node leads when an upgraded node proposes the new command: it
// commits it, then halts on it. A halted leader would commit every later
// command and answer each with an error; it must hand the leadership to an
// upgraded node, and writes must succeed again.
func TestHaltedLeaderStepsDown(t *testing.T) {
	c := nodetest.Start(t, 3, lanTimeouts, func(i int) node.Options {
		return node.Options{Register: func(reg *raftfsm.Registry) {
			if i == 2 {
				return
			}
			reg.Register(cmdNewFeature, "test.newFeature", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
				return []byte("done"), nil
			})
		}}
	}, nil)
	li, leader := c.WaitLeader(5 * time.Second)
	if li != 2 {
		if err := leader.Raft().LeadershipTransferToServer("c", raft.ServerAddress(c.Configs[2].RaftAddr)).Error(); err != nil {
			t.Fatalf("transfer leadership to the old node: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !c.Nodes[2].IsLeader() {
			if time.Now().After(deadline) {
				t.Fatal("old node did not become leader")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ctx := context.Background()
	f := c.Nodes[0]
	_, err := f.Propose(ctx, node.Proposal{Type: cmdNewFeature, Version: 1})
	t.Logf("new command through an upgraded follower while the old node leads: %v", err)
	if err != nil && !errors.Is(err, node.ErrUnknownOutcome) {
		t.Fatalf("Propose = %v; it committed, so success or an unknown outcome", err)
	}
	start := time.Now()
	for k := 0; ; k++ {
		ok, err := f.KV().SetIfAbsent(ctx, fmt.Sprintf("after-halt-%d", k), []byte("v"), 0)
		if err == nil && ok {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("writes still fail %v after the leader halted: %v", time.Since(start), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("writes succeed again %v after the halt", time.Since(start).Round(time.Millisecond))
	if li, _ := c.WaitLeader(5 * time.Second); li == 2 {
		t.Fatal("the halted node still leads")
	}
}
