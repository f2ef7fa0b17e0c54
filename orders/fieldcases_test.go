package orders_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"masterorder/orders"
)

// fastWindows shortens cooldown and burst so many orders fit in a test.
func fastWindows(_ int, c *orders.FileConfig) {
	c.Admission.Cooldown.Duration = 150 * time.Millisecond
	c.Admission.SessionBurst.Duration = 50 * time.Millisecond
}

// The seed article's field cases.
func TestFieldCases(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	body := cart(line("ramen", 1, "nori"), line("tea", 2))

	t.Run("A same POST three times is one order and two replays", func(t *testing.T) {
		g := s.guest(s.openSession("A1"))
		k := newKey()
		var replays int
		var id int64
		for i := 0; i < 3; i++ {
			r := g.order(i, k, body)
			var o success
			r.json(t, &o)
			if r.Status != 200 || (id != 0 && o.OrderID != id) {
				t.Fatalf("attempt %d: %d %s", i, r.Status, r.Body)
			}
			id = o.OrderID
			if o.IdempotentReplay {
				replays++
			}
		}
		if replays != 2 || len(g.history(2, "")) != 1 {
			t.Fatalf("replays=%d", replays)
		}
	})

	t.Run("B double tap with a new key each time is one order", func(t *testing.T) {
		g := s.guest(s.openSession("B1"))
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func(i int) { defer wg.Done(); g.order(i, newKey(), body) }(i)
		}
		wg.Wait()
		// The taps that were turned away retry (as order-sdk.js does)
		// after Retry-After: each becomes a replay, never a second order.
		time.Sleep(1100 * time.Millisecond)
		other := s.guest(g.sess)
		r := other.order(1, newKey(), body)
		var o success
		r.json(t, &o)
		if r.Status != 200 || !o.IdempotentReplay {
			t.Fatalf("retried tap: %d %s", r.Status, r.Body)
		}
		if n := len(g.history(0, "")); n != 1 {
			t.Fatalf("want 1 order, got %d", n)
		}
	})

	t.Run("C lost response resent to another node, across a leader kill", func(t *testing.T) {
		g := s.guest(s.openSession("C1"))
		k := newKey()
		li, _ := s.c.WaitLeader(5 * time.Second)
		first := g.order((li+1)%3, k, body) // the guest never sees this answer
		var o1 success
		first.json(t, &o1)
		// Look instead of resending: the history finds it by key.
		if h := g.history((li+2)%3, "?requestId="+k); len(h) != 1 || h[0].OrderID != o1.OrderID {
			t.Fatalf("history by requestId: %+v", h)
		}
		s.c.StopNode(li)
		s.c.WaitLeader(10 * time.Second)
		r := g.order((li+2)%3, k, body)
		var o2 success
		r.json(t, &o2)
		if r.Status != 200 || !o2.IdempotentReplay || o2.OrderID != o1.OrderID {
			t.Fatalf("resend after leader kill: %d %s (first %s)", r.Status, r.Body, first.Body)
		}
		s.c.StartNode(li)
		s.c.WaitLeader(10 * time.Second)
	})

	t.Run("failed save then a new key goes through", func(t *testing.T) {
		g := s.guest(s.openSession("F1"))
		b := cart(line("ramen", 1))
		b["expectedTotal"] = 1
		if r := g.order(0, newKey(), b); r.Status != 400 {
			t.Fatalf("price: %d %s", r.Status, r.Body)
		}
		if r := g.order(1, newKey(), cart(line("gyoza", 99))); r.Status != 409 {
			t.Fatalf("stock: %d %s", r.Status, r.Body)
		}
		if r := g.order(2, newKey(), cart(line("ramen", 1))); r.Status != 200 {
			t.Fatalf("corrected: %d %s", r.Status, r.Body)
		}
	})
}

// Lunch peak: many tables at once, and simultaneous orders from one table
// are serialized; no duplicate, stock exact.
func TestLunchPeak(t *testing.T) {
	s := startStore(t, 3, fastWindows)
	s.seedMenu()
	s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 100})
	const tables = 12
	var mu sync.Mutex
	acked := map[int64]bool{}
	gyozaSold := 0
	var wg sync.WaitGroup
	for tb := 0; tb < tables; tb++ {
		sess := s.openSession(fmt.Sprintf("L%d", tb))
		for gi := 0; gi < 3; gi++ {
			wg.Add(1)
			go func(g *guest, n int) {
				defer wg.Done()
				// Every guest of the table orders at the same moment.
				q := 1 + n
				k := newKey()
				for attempt := 0; attempt < 50; attempt++ {
					r := g.order((n+attempt)%3, k, cart(line("gyoza", q)))
					if r.Status == 200 {
						var o success
						r.json(t, &o)
						mu.Lock()
						if !acked[o.OrderID] {
							acked[o.OrderID] = true
							gyozaSold += q
						}
						mu.Unlock()
						return
					}
					if r.Status != 409 && r.Status != 429 {
						t.Errorf("order: %d %s", r.Status, r.Body)
						return
					}
					time.Sleep(60 * time.Millisecond)
				}
				t.Errorf("guest never got through")
			}(s.guest(sess), gi)
		}
	}
	wg.Wait()
	if len(acked) != tables*3 {
		t.Fatalf("acknowledged %d orders, want %d", len(acked), tables*3)
	}
	s.c.AssertIdentical(10 * time.Second)
	for i := 0; i < 3; i++ {
		if got := *s.stock(i, "gyoza"); got != int64(100-gyozaSold) {
			t.Fatalf("node %d gyoza stock %d, want %d", i, got, 100-gyozaSold)
		}
	}
}

// Many simulated guests with double taps, key changes, lost responses and
// random nodes: every intended order exists at most once, every
// acknowledged order is on every node, stock is exact and never negative.
func TestRandomGuestsProperty(t *testing.T) {
	s := startStore(t, 3, fastWindows)
	s.seedMenu()
	const initial = 40
	s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": initial})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	type intended struct {
		keys  []string
		acked map[int64]bool
	}
	var mu sync.Mutex
	var all []*intended
	var wg sync.WaitGroup
	for tb := 0; tb < 6; tb++ {
		sess := s.openSession("P" + strconv.Itoa(tb))
		for gi := 0; gi < 2; gi++ {
			wg.Add(1)
			go func(g *guest, rng *rand.Rand) {
				defer wg.Done()
				for n := 0; n < 4; n++ {
					it := &intended{acked: map[int64]bool{}}
					mu.Lock()
					all = append(all, it)
					mu.Unlock()
					// A distinct cart per intended order of this guest.
					body := cart(line("ramen", 1+n+gi*4, []string{"egg", "nori"}[rng.IntN(2)]), line("gyoza", 1+rng.IntN(2)))
					key := newKey()
					addKey := func(k string) { mu.Lock(); it.keys = append(it.keys, k); mu.Unlock() }
					addKey(key)
					ack := func(r resp) bool {
						if r.Status != 200 {
							return false
						}
						var o success
						r.json(t, &o)
						mu.Lock()
						it.acked[o.OrderID] = true
						mu.Unlock()
						return true
					}
					var tapWG sync.WaitGroup
					switch rng.IntN(4) {
					case 0: // double tap, same key
						tapWG.Add(1)
						at := rng.IntN(3)
						go func() { defer tapWG.Done(); ack(g.order(at, key, body)) }()
					case 1: // double tap, the key changed
						k2 := newKey()
						addKey(k2)
						tapWG.Add(1)
						at := rng.IntN(3)
						go func() { defer tapWG.Done(); ack(g.order(at, k2, body)) }()
					case 2: // the first response is lost
						g.order(rng.IntN(3), key, body)
					}
					done := false
					for attempt := 0; attempt < 60 && !done; attempt++ {
						r := g.order(rng.IntN(3), key, body)
						switch {
						case ack(r):
							done = true
						case r.Status == 409 && r.reason(t) == "OUT_OF_STOCK":
							done = true
						case r.Status == 409 || r.Status == 429 || r.Status == 503:
							time.Sleep(time.Duration(40+rng.IntN(60)) * time.Millisecond)
						default:
							t.Errorf("unexpected answer %d %s", r.Status, r.Body)
							done = true
						}
					}
					tapWG.Wait()
				}
			}(s.guest(sess), rand.New(rand.NewPCG(seed, uint64(tb*10+gi))))
		}
	}
	wg.Wait()
	s.c.AssertIdentical(10 * time.Second)

	// Read every order from every node.
	byNode := make([]map[int64]orderView, 3)
	for i := range byNode {
		byNode[i] = map[int64]orderView{}
	}
	sessions := s.mustStaff(0, "GET", "/api/staff/sessions?status=ACTIVE", nil)
	var list struct {
		Sessions []struct{ SessionID, PIN string } `json:"sessions"`
	}
	sessions.json(t, &list)
	for _, ss := range list.Sessions {
		for i := 0; i < 3; i++ {
			g := s.guest(session{ID: ss.SessionID, PIN: ss.PIN})
			for _, o := range g.history(i, "?limit=200") {
				byNode[i][o.OrderID] = o
			}
		}
	}
	byKey := map[string][]int64{}
	gyozaSold := 0
	for id, o := range byNode[0] {
		if o.RequestID != nil {
			byKey[*o.RequestID] = append(byKey[*o.RequestID], id)
		}
		for _, it := range o.Items {
			if it.MenuID == "gyoza" && o.Status != "CANCELLED" {
				gyozaSold += it.Quantity
			}
		}
	}
	for k, ids := range byKey {
		if len(ids) > 1 {
			t.Errorf("key %s has %d orders", k, len(ids))
		}
	}
	for _, it := range all {
		orders := 0
		for _, k := range it.keys {
			orders += len(byKey[k])
		}
		if orders > 1 {
			t.Errorf("intended order with keys %v exists %d times", it.keys, orders)
		}
		if len(it.acked) > 1 {
			t.Errorf("intended order acknowledged as %v", it.acked)
		}
		for id := range it.acked {
			for i := 0; i < 3; i++ {
				if _, ok := byNode[i][id]; !ok {
					t.Errorf("acknowledged order %d missing on node %d", id, i)
				}
			}
		}
	}
	left := *s.stock(1, "gyoza")
	if left < 0 || left != int64(initial-gyozaSold) {
		t.Errorf("gyoza stock %d, want %d - %d", left, initial, gyozaSold)
	}
	t.Logf("%d intended orders, %d stored", len(all), len(byNode[0]))
}
