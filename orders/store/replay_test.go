package store

import (
	"strings"
	"testing"
)

// A resend's lookups seek the session's orders on orders_session: never a
// scan of every order (a busy day holds thousands).
func TestReplayLookupsUseTheSessionIndex(t *testing.T) {
	tx := migratedTx(t)
	plan := queryPlan(t, tx, findReplaysQuery, "S1", "k", "fp", 0)
	if !strings.Contains(plan, "orders_session") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("plan %q: want a seek on orders_session in seq order", plan)
	}
}

// An order's row replays it by key and by cart while each window is open
// (before KeyUntil, CartUntil), the newest order of the session first; an
// order stored without replay (older versions, the zero OrderReplay)
// replays nothing, and another session's orders never answer.
func TestOrderRowReplaysWithinItsWindows(t *testing.T) {
	tx := migratedTx(t)
	key := "6ba7b810-9dad-41d1-80b4-00c04fd43701"
	put := func(id, seq int64, session string, r OrderReplay) {
		t.Helper()
		req := key
		o := Order{OrderID: id, Seq: seq, SessionID: session, TableID: "T1", Status: StatusAccepted, TotalPrice: 100 * id, RequestID: &req, Source: "guest", TicketNo: id}
		if err := AddOrder(tx, o, 0, r); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
	}
	put(1, 10, "S1", OrderReplay{})
	put(2, 11, "S2", OrderReplay{Fingerprint: "fp", Attempt: "a2", KeyUntil: 5000, CartUntil: 2000})
	put(3, 12, "S1", OrderReplay{Fingerprint: "fp", Attempt: "a3", KeyUntil: 5000, CartUntil: 2000})
	put(4, 13, "S1", OrderReplay{Fingerprint: "fp", Attempt: "a4", CartUntil: 3000})
	for _, c := range []struct {
		byKey bool
		now   int64
		want  int64 // 0: none
	}{
		{true, 1000, 3}, {true, 4999, 3}, {true, 5000, 0},
		{false, 1000, 4}, {false, 2999, 4}, {false, 3000, 0},
	} {
		var r Replayed
		var found bool
		var err error
		if c.byKey {
			r, found, err = KeyReplay(tx, "S1", key, c.now)
		} else {
			var both Replays
			both, err = FindReplays(tx, "S1", "", "fp", c.now)
			r, found = both.Cart, both.CartFound
		}
		if err != nil {
			t.Fatal(err)
		}
		if found != (c.want != 0) || r.OrderID != c.want {
			t.Fatalf("by key %v at %d: %+v %v, want order %d", c.byKey, c.now, r, found, c.want)
		}
		if found && (r.TotalPrice != 100*c.want || r.TicketNo != c.want || r.RequestID == nil || *r.RequestID != key || r.Fingerprint != "fp" || r.Attempt != "a"+string(rune('0'+c.want))) {
			t.Fatalf("order %d answers %+v", c.want, r)
		}
	}
	// One lookup answers both: the key's order and the cart's newest.
	both, err := FindReplays(tx, "S1", key, "fp", 1000)
	if err != nil || !both.KeyFound || !both.CartFound || both.Key.OrderID != 3 || both.Cart.OrderID != 4 {
		t.Fatalf("both at once: %+v %v", both, err)
	}
	if both, _ := FindReplays(tx, "S1", "", "other", 0); both.KeyFound || both.CartFound {
		t.Fatal("another cart replays")
	}
	if both, _ := FindReplays(tx, "S3", key, "fp", 0); both.KeyFound || both.CartFound {
		t.Fatal("another session's order replays")
	}
}
