package orders_test

import (
	"testing"
	"time"
)

// An order placed as version 5 keeps its replay in its row, not in the KV:
// a resend of its key through any box is still answered by that box's
// replica before proposing. Twelve resends per box, back to back, all
// replay; proposed, all but four per box and second would have met the
// per-session proposal limit (409), and the log would have grown by one
// entry per resend.
func TestResendOfARowReplayIsAnsweredLocally(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("R1")
	g := s.guest(sess)
	key := newKey()
	first := g.order(0, key, cart(line("tea", 1)))
	var placed success
	first.json(t, &placed)
	if first.Status != 200 || placed.IdempotentReplay {
		t.Fatalf("order: %d %s", first.Status, first.Body)
	}
	// A read through each box waits for its replica to hold the order
	// (and commits the FSM's open group: local reads see committed groups).
	for i := range s.c.Nodes {
		if h := g.history(i, ""); len(h) != 1 {
			t.Fatalf("node %d: %d orders in the history, want 1", i, len(h))
		}
	}
	_, leader := s.c.WaitLeader(10 * time.Second)
	before := leader.Raft().LastIndex()
	const resends = 12
	for i := range s.c.Nodes {
		for range resends {
			r := g.order(i, key, cart(line("tea", 1)))
			var b success
			r.json(t, &b)
			if r.Status != 200 || !b.IdempotentReplay || b.OrderID != placed.OrderID || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("node %d: %d %s, want the replay of order %d", i, r.Status, r.Body, placed.OrderID)
			}
		}
	}
	// A few entries may come from elsewhere (the windows' expiry, a
	// barrier), never one per resend.
	if grown := leader.Raft().LastIndex() - before; grown >= resends {
		t.Fatalf("the log grew by %d entries during %d resends", grown, 3*resends)
	}
	// The same key with another cart is a reuse, answered locally too.
	if r := g.order(2, key, cart(line("tea", 2))); r.Status != 422 || r.reason(t) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reused key: %d %s", r.Status, r.Body)
	}
	if h := g.history(1, ""); len(h) != 1 {
		t.Fatalf("the session has %d orders, want 1", len(h))
	}
}
