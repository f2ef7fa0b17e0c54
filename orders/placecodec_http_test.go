package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"masterorder/kv"
	"masterorder/node"
	"masterorder/orders/admission"
)

// A result cached as JSON by an older build is still answered before
// proposing: with the entry on every replica, a resend of its key through
// any box replays that order (the local replica's answer, preadmit.go), and
// a second order is never made.
func TestPreadmitReplaysAResultCachedAsJSON(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("J1")
	key := newKey()
	fp := admission.Fingerprint(sess.ID, admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1, Toppings: []string{}}}))
	// The bytes an older build wrote under the key (encoding/json of
	// cachedResult, ticket number included).
	old := fmt.Sprintf(`{"fp":%q,"body":{"requestId":%q,"allowed":true,"orderId":777,"status":"ACCEPTED","totalPrice":300,"idempotentReplay":false,"ticketNo":5},"attempt":"old-attempt"}`, fp, key)
	put, _ := json.Marshal(map[string]any{"op": "put", "key": "idem:" + sess.ID + ":" + key, "value": []byte(old), "ttlMs": 3_600_000})
	_, leader := s.c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := leader.Propose(ctx, node.Proposal{Type: kv.CmdOp, Version: 1, Payload: put}); err != nil {
		t.Fatal(err)
	}
	want := leader.FSM().Applied()
	deadline := time.Now().Add(30 * time.Second)
	for i := range s.c.Nodes {
		for s.c.Nodes[i].FSM().Applied() < want {
			if time.Now().After(deadline) {
				t.Fatalf("node %d never applied index %d", i, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	g := s.guest(sess)
	for i := range s.c.Nodes {
		r := g.order(i, key, cart(line("tea", 1)))
		var b success
		r.json(t, &b)
		if r.Status != 200 || !b.IdempotentReplay || b.OrderID != 777 || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("node %d: %d %s, want the replay of order 777", i, r.Status, r.Body)
		}
	}
	// The same key with another cart is a reuse, not an order.
	if r := g.order(1, key, cart(line("tea", 2))); r.Status != 422 || r.reason(t) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reused key: %d %s", r.Status, r.Body)
	}
	if h := g.history(0, ""); len(h) != 0 {
		t.Fatalf("the session has %d orders, want none (only the cached answer)", len(h))
	}
}
