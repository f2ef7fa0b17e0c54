package orders

import (
	"database/sql"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"masterorder/orders/admission"
	"masterorder/orders/store"
)

// Version 5 keeps an admitted order's key result and cart window in its
// row (store/replay.go); these tests hold it to version 4's decisions.

// tablesBesideReplay is every table as FSMTables lists it, with the
// orders' replay columns (version 5's, empty before it) left out.
func tablesBesideReplay(t *testing.T, r *rv) map[string][]string {
	t.Helper()
	tables := FSMTables(t, r.f)
	var orders []string
	r.query(func(db *sql.DB) (err error) {
		orders, err = rowsText(db, `SELECT order_id, seq, session_id, table_id, status, items, total_price, created_at, updated_at,
			request_id, client_id, source, ticket_no, bumped FROM orders ORDER BY rowid`)
		return err
	})
	tables["orders"] = orders
	return tables
}

// kvOfOrders is the KV's idem: and payload: entries.
func kvOfOrders(r *rv) map[string]any {
	out := map[string]any{}
	for k, v := range r.kvDecoded() {
		if strings.HasPrefix(k, prefixIdem) || strings.HasPrefix(k, prefixPayload) {
			out[k] = v
		}
	}
	return out
}

// The same log, its orders as version 4 on one replica and as version 5
// on another, decides the same all along: answers, orders, stock, audit,
// outbox, print jobs and the windows left in the KV. Resends by key and by
// cart within their windows replay; past them they are new orders, at the
// same FSM time on both. Version 5 writes no idem: or payload: key for an
// admitted order; the new key a cart replay remembers stays a KV key.
func TestPlaceOrderV4AndV5DecideTheSame(t *testing.T) {
	v4, v5 := newRV(t), newRV(t)
	// Short windows (10 ms of FSM time per index) so the test can pass them.
	w := Windows{CooldownMs: 30, BurstMs: 10, PayloadMs: 400, IdempotencyMs: 1500}
	egg := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}}})
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1, Note: "氷なし"}})
	order := func(key, client string, lines []admission.Line) placeOrderCmd {
		c := freshOrder(key, client, lines)
		c.Windows, c.Attempt = w, "a-"+key[len(key)-4:]
		return c
	}
	both := func(what string, c placeOrderCmd) Result {
		t.Helper()
		a, b := v4.applyV(CmdPlaceOrder, 4, c), v5.applyV(CmdPlaceOrder, 5, c)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: v4 %+v, v5 %+v", what, a, b)
		}
		return a
	}
	idle := func(n int) {
		for range n {
			v4.applyV(CmdSetStock, 2, setStockCmd{SKU: "tea"})
			v5.applyV(CmdSetStock, 2, setStockCmd{SKU: "tea"})
		}
	}
	const k = "6ba7b810-9dad-41d1-80b4-00c04fd4"
	first := order(k+"3401", "guest-rowclient1", egg)
	if res := both("first", first); res.Status != 200 || res.Replay {
		t.Fatalf("first order: %+v", res)
	}
	if res := both("same attempt again", first); res.Status != 200 || res.Replay {
		t.Fatalf("the forwarding layer's second commit: %+v, want the first answer", res)
	}
	resend := first
	resend.Attempt = "a-resend"
	if res := both("resend", resend); !res.Replay {
		t.Fatalf("resend: %+v, want a replay", res)
	}
	reused := resend
	reused.Fingerprint = admission.Fingerprint(fzSession3, tea)
	if res := both("reused key", reused); res.Reason != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reused key: %+v", res)
	}
	idle(5) // past the burst and cooldown windows
	sameCart := order(k+"3402", "guest-rowclient2", egg)
	if res := both("same cart, new key", sameCart); !res.Replay {
		t.Fatalf("same cart, new key: %+v, want a replay", res)
	}
	sameCart.Attempt = "a-again"
	if res := both("the remembered key", sameCart); !res.Replay {
		t.Fatalf("the remembered key: %+v, want a replay", res)
	}
	repeat := order(k+"3403", "guest-rowclient3", egg)
	repeat.AllowRepeat = true
	if res := both("confirmed repeat", repeat); res.Status != 200 || res.Replay {
		t.Fatalf("confirmed repeat: %+v, want a new order", res)
	}
	idle(5)
	other := order(k+"3404", "guest-rowclient4", egg)
	if res := both("same cart after the repeat", other); !res.Replay {
		t.Fatalf("same cart after the repeat: %+v, want the repeat's replay", res)
	}
	priced := order(k+"3405", "guest-rowclient5", tea)
	priced.ExpectedTotal = fzPrice(1)
	both("wrong price", priced)
	// Past the cart window, not the key's: the cart is a new order, the
	// key still replays.
	idle(45)
	if res := both("the cart after its window", order(k+"3406", "guest-rowclient6", egg)); res.Status != 200 || res.Replay {
		t.Fatalf("the cart after its window: %+v, want a new order", res)
	}
	if res := both("the key inside its window", resend); !res.Replay {
		t.Fatalf("the key inside its window: %+v, want a replay", res)
	}
	// Past the key's window too: the same key is a new order, as the KV
	// forgets a lapsed key.
	idle(150)
	if res := both("the key after its window", resend); res.Status != 200 || res.Replay {
		t.Fatalf("the key after its window: %+v, want a new order", res)
	}
	if a, b := tablesBesideReplay(t, v4), tablesBesideReplay(t, v5); !reflect.DeepEqual(a, b) {
		t.Fatalf("tables differ:\nv4 %v\nv5 %v", a, b)
	}
	// Cooldown and burst keys are the same in both.
	rest := func(r *rv) map[string]any {
		out := r.kvDecoded()
		for k := range kvOfOrders(r) {
			delete(out, k)
		}
		return out
	}
	if a, b := rest(v4), rest(v5); !reflect.DeepEqual(a, b) {
		t.Fatalf("windows differ:\nv4 %v\nv5 %v", a, b)
	}
	// Only the keys the cart replays remembered are KV keys in version 5.
	got := kvOfOrders(v5)
	if len(got) != 2 || got[keyIdem(fzSession3, sameCart.RequestID)] == nil || got[keyIdem(fzSession3, other.RequestID)] == nil {
		t.Fatalf("version 5 left %v in the KV, want only the keys of %s and %s", got, sameCart.RequestID, other.RequestID)
	}
	if len(kvOfOrders(v4)) < 3 {
		t.Fatalf("version 4 cached %v, want its keys and windows", kvOfOrders(v4))
	}
}

// Results a version-4 command cached as KV keys still replay when the
// resend comes as version 5, and an order of version 5 is replayed by a
// version-4 resend (a box not yet upgraded proposing it): in a mixed log
// one cart is one order.
func TestMixedV4AndV5ResendsReplay(t *testing.T) {
	r := newRV(t)
	w := Windows{PayloadMs: 30000, IdempotencyMs: 3_600_000}
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 2}})
	egg := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}}})
	const k = "6ba7b810-9dad-41d1-80b4-00c04fd4"
	mk := func(key, attempt string, lines []admission.Line) placeOrderCmd {
		c := freshOrder(k+key, "guest-mixclient1", lines)
		c.Windows, c.Attempt = w, attempt
		return c
	}
	var ids []int64
	for _, step := range []struct {
		what    string
		version uint8
		c       placeOrderCmd
		replay  bool
	}{
		{"v4 order", 4, mk("3501", "m1", tea), false},
		{"its key as v5", 5, mk("3501", "m2", tea), true},
		{"its cart as v5", 5, mk("3502", "m3", tea), true},
		{"v5 order", 5, mk("3503", "m4", egg), false},
		{"its key as v4", 4, mk("3503", "m5", egg), true},
		{"its cart as v4", 4, mk("3504", "m6", egg), true},
		{"its key again as v5", 5, mk("3503", "m7", egg), true},
	} {
		res := r.applyV(CmdPlaceOrder, step.version, step.c)
		var b successBody
		json.Unmarshal(res.Body, &b)
		if res.Status != 200 || res.Replay != step.replay || b.IdempotentReplay != step.replay {
			t.Fatalf("%s: %d %s replay=%v, want replay=%v", step.what, res.Status, res.Reason, res.Replay, step.replay)
		}
		ids = append(ids, b.OrderID)
	}
	if ids[1] != ids[0] || ids[2] != ids[0] || ids[4] != ids[3] || ids[5] != ids[3] || ids[6] != ids[3] || ids[0] == ids[3] {
		t.Fatalf("order ids %v: want two orders, each resend answering its own", ids)
	}
	var n int
	r.query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT COUNT(*) FROM orders WHERE session_id = ?`, fzSession3).Scan(&n)
	})
	if n != 2 {
		t.Fatalf("%d orders for two carts, want 2", n)
	}
}

// A replay from the row answers the order as it was admitted (status
// ACCEPTED, its total and ticket number), however the order has moved on
// since.
func TestRowReplayAnswersTheAdmission(t *testing.T) {
	r := newRV(t)
	c := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd43601", "guest-rowclient9", fzLines())
	c.Attempt = "r1"
	placed := r.applyV(CmdPlaceOrder, 5, c)
	var first successBody
	json.Unmarshal(placed.Body, &first)
	if placed.Status != 200 || first.TicketNo == 0 {
		t.Fatalf("order: %+v", placed)
	}
	if res := r.apply(CmdSetOrderStatus, setOrderStatusCmd{OrderID: first.OrderID, Status: store.StatusCooking, Node: "a"}); res.Status != 200 {
		t.Fatalf("cooking: %+v", res)
	}
	c.Attempt = "r2"
	res := r.applyV(CmdPlaceOrder, 5, c)
	var again successBody
	json.Unmarshal(res.Body, &again)
	first.IdempotentReplay = true
	if !res.Replay || !reflect.DeepEqual(again, first) {
		t.Fatalf("replay %s, want %+v", res.Body, first)
	}
}
