package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"masterorder/node/nodetest"
)

func TestWriteThroughFollowerAppliesEverywhere(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	_, f := c.Follower()
	ctx := context.Background()
	ok, err := f.KV().SetIfAbsent(ctx, "lock:x", []byte("t1"), time.Minute)
	if err != nil || !ok {
		t.Fatalf("SetIfAbsent through follower = %v, %v", ok, err)
	}
	ok, err = f.KV().SetIfAbsent(ctx, "lock:x", []byte("t2"), time.Minute)
	if err != nil || ok {
		t.Fatalf("second SetIfAbsent = %v, %v; want false", ok, err)
	}
	c.WaitConverged(5 * time.Second)
	for i, n := range c.Nodes {
		e, ok, err := n.KV().Get("lock:x")
		if err != nil || !ok || string(e.Value) != "t1" {
			t.Fatalf("node %d: %v %v %q", i, ok, err, e.Value)
		}
	}
	c.AssertIdentical(5 * time.Second)
}

func TestLeaderStopsAndRestartCatchesUp(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	ctx := context.Background()
	li, leader := c.WaitLeader(5 * time.Second)
	for i := 0; i < 20; i++ {
		if _, err := leader.KV().SetIfAbsent(ctx, fmt.Sprintf("k%d", i), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	c.StopNode(li)
	start := time.Now()
	_, n2 := c.WaitLeader(10 * time.Second)
	t.Logf("new leader after %v", time.Since(start))
	for i := 20; i < 40; i++ {
		if _, err := n2.KV().SetIfAbsent(ctx, fmt.Sprintf("k%d", i), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	c.StartNode(li)
	c.AssertIdentical(10 * time.Second)
	if _, ok, _ := c.Nodes[li].KV().Get("k39"); !ok {
		t.Fatal("restarted node misses k39")
	}
}
