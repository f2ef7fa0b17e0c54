package node_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// A new leader whose post-election Barrier fails retries it and becomes
// ready; one whose Barrier keeps failing hands the leadership on instead
// of holding the cluster without serving it.
func TestLeaderRetriesItsBarrierThenStepsDown(t *testing.T) {
	// failNext[i]: how many barriers of node i fail next (-1: all).
	var failNext, calls [3]atomic.Int64
	c := nodetest.Start(t, 3, nil, func(i int) node.Options {
		return node.Options{FailBarrier: func() error {
			calls[i].Add(1)
			switch n := failNext[i].Load(); {
			case n < 0:
				return errors.New("injected barrier failure")
			case n > 0:
				failNext[i].Add(-1)
				return errors.New("injected barrier failure")
			}
			return nil
		}}
	}, nil)
	transferTo := func(target int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for c.Nodes[target].Raft().State() != raft.Leader {
			if time.Now().After(deadline) {
				t.Fatalf("node %d never became the raft leader", target)
			}
			li, leader := c.WaitLeader(30 * time.Second)
			if li != target {
				cfg := c.Configs[target]
				leader.Raft().LeadershipTransferToServer(raft.ServerID(cfg.NodeID), raft.ServerAddress(cfg.RaftAddr)).Error()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	write := func(key string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			_, leader := c.WaitLeader(30 * time.Second)
			if _, err := leader.KV().SetIfAbsent(ctx, key, []byte("v"), 0); err == nil {
				return
			} else if ctx.Err() != nil {
				t.Fatalf("write %s: %v", key, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Three failures, then the barrier goes through: the node serves.
	li, _ := c.WaitLeader(10 * time.Second)
	target := (li + 1) % 3
	failNext[target].Store(3)
	before := calls[target].Load()
	transferTo(target)
	deadline := time.Now().Add(60 * time.Second)
	for !c.Nodes[target].IsLeader() {
		if c.Nodes[target].Raft().State() != raft.Leader {
			t.Fatalf("node %d lost the leadership while retrying its barrier", target)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never became ready after its barrier failures (%d barrier calls)", target, calls[target].Load()-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := calls[target].Load() - before; got < 4 {
		t.Fatalf("node %d became ready after %d barrier calls, want 3 failures and a success", target, got)
	}
	write("after-retry")

	// A barrier that never succeeds: the node steps down, another serves.
	stuck := (target + 1) % 3
	failNext[stuck].Store(-1)
	transferTo(stuck)
	deadline = time.Now().Add(90 * time.Second)
	for {
		li, _ := c.WaitLeader(90 * time.Second)
		if li != stuck && c.Nodes[stuck].Raft().State() != raft.Leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d with a failing barrier still holds the leadership", stuck)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c.Nodes[stuck].IsLeader() {
		t.Fatal("a node whose barrier never succeeded became ready")
	}
	write("after-step-down")
	failNext[stuck].Store(0)
	c.AssertIdentical(30 * time.Second)
	for i, n := range c.Nodes {
		if _, ok, _ := n.KV().Get("after-step-down"); !ok {
			t.Fatalf("node %d misses the write made after the step-down", i)
		}
	}
	t.Logf("stuck node made %d barrier attempts before stepping down", calls[stuck].Load())
}
