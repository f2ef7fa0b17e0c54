package node_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// A burst of concurrent reads on every node costs a few ReadIndex rounds,
// not one per read: followers share their requests to the leader, and the
// leader shares its heartbeat rounds among its own reads and the
// followers' requests.
func TestConcurrentReadsShareReadIndexRounds(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	li, leader := c.WaitLeader(10 * time.Second)
	// One write, so every node has a leader it heard from and reads go
	// through ReadIndex rather than any start-up path.
	if ok, err := leader.KV().SetIfAbsent(context.Background(), "warm", []byte("x"), time.Minute); err != nil || !ok {
		t.Fatalf("warm-up write = %v, %v", ok, err)
	}
	c.WaitConverged(10 * time.Second)

	const perNode = 200
	before := make([]uint64, len(c.Nodes))
	for i, n := range c.Nodes {
		before[i] = n.ReadIndexRounds()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, n := range c.Nodes {
		for range perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := n.ConsistentRead(ctx); err != nil {
					failed.Add(1)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d reads failed", f, 3*perNode)
	}
	total := 3 * perNode
	for i, n := range c.Nodes {
		d := n.ReadIndexRounds() - before[i]
		t.Logf("node %d (leader %v): %d rounds for %d local reads", i, i == li, d, perNode)
		// The leader's rounds serve all 600 reads; a follower's, its 200.
		limit := uint64(perNode / 4)
		if i == li {
			limit = uint64(total / 4)
		}
		if d == 0 || d > limit {
			t.Errorf("node %d ran %d ReadIndex rounds, want 1..%d", i, d, limit)
		}
	}
}

// Read-your-writes while rounds are shared: a write acknowledged through
// one node is seen by every read started afterwards on another node, even
// while other readers keep a round in flight on every node all the time
// (a read that joined a round already in flight could miss the write).
func TestSharedReadIndexKeepsReadYourWrites(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	c.WaitLeader(10 * time.Second)

	ctx, stop := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	for _, n := range c.Nodes {
		for range 8 {
			bg.Add(1)
			go func() {
				defer bg.Done()
				for ctx.Err() == nil {
					rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					n.ConsistentRead(rctx)
					cancel()
				}
			}()
		}
	}
	defer func() { stop(); bg.Wait() }()

	const writes = 60
	for k := range writes {
		w := c.Nodes[k%3]
		key := fmt.Sprintf("ryw:%d", k)
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ok, err := w.KV().SetIfAbsent(wctx, key, []byte("v"), time.Hour)
		cancel()
		if err != nil || !ok {
			t.Fatalf("write %s through node %d = %v, %v", key, k%3, ok, err)
		}
		// The write is acknowledged: reads started now, on the other
		// nodes, must see it.
		var wg sync.WaitGroup
		for j, r := range c.Nodes {
			if j == k%3 {
				continue
			}
			for range 4 {
				wg.Add(1)
				go func(j int, r *node.Node) {
					defer wg.Done()
					rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := r.ConsistentRead(rctx); err != nil {
						t.Errorf("read on node %d: %v", j, err)
						return
					}
					if _, ok, err := r.KV().Get(key); err != nil || !ok {
						t.Errorf("node %d: %s acknowledged through node %d but not read afterwards (%v, %v)", j, key, k%3, ok, err)
					}
				}(j, r)
			}
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
