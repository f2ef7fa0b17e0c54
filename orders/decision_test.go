package orders_test

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// One test per row of API.md's decision table, through the HTTP API of a
// 3-node cluster, sending to followers and the leader alike.
func TestDecisionTable(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	body := cart(line("ramen", 2, "egg"))

	t.Run("1 key and client id", func(t *testing.T) {
		g := s.guest(s.openSession("R1"))
		for _, key := range []string{"", "not-a-uuid", "550e8400-e29b-11d4-a716-446655440000"} {
			r := g.order(0, key, body)
			if r.Status != 400 || r.reason(t) != "INVALID_IDEMPOTENCY_KEY" {
				t.Errorf("key %q: %d %s", key, r.Status, r.Body)
			}
		}
		g.client = "nope"
		r := g.order(1, newKey(), body)
		if r.Status != 400 || r.reason(t) != "INVALID_CLIENT_ID" {
			t.Errorf("bad client id: %d %s", r.Status, r.Body)
		}
		g.client = newClient()
		k := newKey()
		r = g.order(2, `"`+strings.ToUpper(k)+`"`, body)
		var ok success
		r.json(t, &ok)
		if r.Status != 200 || ok.RequestID != k {
			t.Errorf("quoted upper-case key: %d %s", r.Status, r.Body)
		}
	})

	t.Run("2 body", func(t *testing.T) {
		g := s.guest(s.openSession("R2"))
		bad := []any{
			`{"items":`, `{"items":[]}`, cart(line("nope", 1)), cart(line("ramen", 1, "cheese")),
			cart(line("gyoza", 1, "egg")), cart(line("ramen", 0)), cart(line("ramen", 100)),
			`{"items":[{"menuId":"ramen","quantity":1}],"extra":true}`,
			`{"items":[{"menuId":"ramen","quantity":"1"}]}`,
		}
		var many []map[string]any
		for i := 0; i < 51; i++ {
			many = append(many, line("tea", 1))
		}
		bad = append(bad, map[string]any{"items": many})
		for i, b := range bad {
			r := g.order(i%3, newKey(), b)
			if r.Status != 400 || r.reason(t) != "INVALID_ORDER" {
				t.Errorf("body %d: %d %s", i, r.Status, r.Body)
			}
		}
	})

	t.Run("3 session, PIN, closed", func(t *testing.T) {
		sess := s.openSession("R3")
		g := s.guest(session{ID: "AAAAAAAAAAAAAAAAAAAAAA", PIN: "0000"})
		if r := g.order(0, newKey(), body); r.Status != 404 || r.reason(t) != "SESSION_NOT_FOUND" {
			t.Errorf("unknown session: %d %s", r.Status, r.Body)
		}
		g = s.guest(session{ID: sess.ID, PIN: wrongPIN(sess.PIN)})
		if r := g.order(1, newKey(), body); r.Status != 401 || r.reason(t) != "INVALID_PIN" {
			t.Errorf("wrong PIN: %d %s", r.Status, r.Body)
		}
		s.mustStaff(2, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", nil)
		g = s.guest(sess)
		if r := g.order(2, newKey(), body); r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
			t.Errorf("closed: %d %s", r.Status, r.Body)
		}
		if r := s.do(0, "GET", "/api/guest/sessions/"+sess.ID, map[string]string{"X-Session-PIN": sess.PIN}, nil); r.Status != 410 {
			t.Errorf("GET closed session: %d", r.Status)
		}
	})

	t.Run("5 replay", func(t *testing.T) {
		g := s.guest(s.openSession("R5"))
		k := newKey()
		first := g.order(0, k, body)
		var a, b success
		first.json(t, &a)
		second := g.order(1, k, body)
		second.json(t, &b)
		if second.Status != 200 || !b.IdempotentReplay || b.OrderID != a.OrderID || a.IdempotentReplay {
			t.Fatalf("replay: %s / %s", first.Body, second.Body)
		}
		if second.Header.Get("X-MasterOrder-Idempotent-Replay") != "true" || second.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay headers missing: %v", second.Header)
		}
	})

	t.Run("6 key reused", func(t *testing.T) {
		g := s.guest(s.openSession("R6"))
		k := newKey()
		if r := g.order(2, k, body); r.Status != 200 {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		if r := g.order(0, k, cart(line("tea", 1))); r.Status != 422 || r.reason(t) != "IDEMPOTENCY_KEY_REUSED" {
			t.Errorf("reuse: %d %s", r.Status, r.Body)
		}
		// expectedTotal and allowRepeat are not part of the fingerprint.
		b2 := cart(line("ramen", 1, "egg"), line("ramen", 1, "egg"))
		b2["expectedTotal"], b2["allowRepeat"] = 2040, true
		if r := g.order(1, k, b2); r.Status != 200 {
			t.Errorf("same cart spelled differently: %d %s", r.Status, r.Body)
		}
	})

	t.Run("7 same key concurrently is one order", func(t *testing.T) {
		g := s.guest(s.openSession("R7"))
		k := newKey()
		var wg sync.WaitGroup
		results := make([]resp, 6)
		for i := range results {
			wg.Add(1)
			go func(i int) { defer wg.Done(); results[i] = g.order(i%3, k, body) }(i)
		}
		wg.Wait()
		ids := map[int64]bool{}
		for _, r := range results {
			if r.Status == 200 {
				var o success
				r.json(t, &o)
				ids[o.OrderID] = true
			} else if r.Status != 409 {
				t.Errorf("concurrent same key: %d %s", r.Status, r.Body)
			}
		}
		if len(ids) != 1 || len(g.history(0, "")) != 1 {
			t.Errorf("want one order, got ids %v", ids)
		}
	})

	t.Run("8 cooldown", func(t *testing.T) {
		g := s.guest(s.openSession("R8"))
		if r := g.order(0, newKey(), body); r.Status != 200 {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		g.sess = s.openSession("R8b") // another table, same phone
		r := g.order(1, newKey(), cart(line("tea", 1)))
		if r.Status != 429 || r.reason(t) != "COOLDOWN_ACTIVE" || r.Header.Get("Retry-After") == "" {
			t.Errorf("cooldown: %d %s %v", r.Status, r.Body, r.Header)
		}
	})

	t.Run("9 session busy during checkout", func(t *testing.T) {
		sess := s.openSession("R9")
		s.mustStaff(0, "POST", "/api/staff/sessions/"+sess.ID+"/checkout/begin", nil)
		g := s.guest(sess)
		r := g.order(1, newKey(), body)
		if r.Status != 409 || r.reason(t) != "SESSION_BUSY" || r.Header.Get("Retry-After") == "" {
			t.Errorf("busy: %d %s", r.Status, r.Body)
		}
		s.mustStaff(2, "POST", "/api/staff/sessions/"+sess.ID+"/checkout/cancel", nil)
		if r := g.order(0, newKey(), body); r.Status != 200 {
			t.Errorf("after cancel: %d %s", r.Status, r.Body)
		}
	})

	t.Run("10 session burst", func(t *testing.T) {
		sess := s.openSession("R10")
		a, b := s.guest(sess), s.guest(sess)
		if r := a.order(0, newKey(), body); r.Status != 200 {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		r := b.order(1, newKey(), cart(line("tea", 1)))
		if r.Status != 409 || r.reason(t) != "SESSION_ORDER_IN_PROGRESS" || r.Header.Get("Retry-After") != "1" {
			t.Errorf("burst: %d %s %v", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	})

	t.Run("11 same cart again", func(t *testing.T) {
		sess := s.openSession("R11")
		a, b := s.guest(sess), s.guest(sess)
		first := a.order(0, newKey(), body)
		var o1 success
		first.json(t, &o1)
		time.Sleep(1100 * time.Millisecond) // past the burst window
		k2 := newKey()
		r := b.order(1, k2, cart(line("ramen", 1, "egg"), line("ramen", 1, "egg")))
		var o2 success
		r.json(t, &o2)
		if r.Status != 200 || !o2.IdempotentReplay || o2.OrderID != o1.OrderID || o2.RequestID != o1.RequestID || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("payload replay: %d %s", r.Status, r.Body)
		}
		// The replayed key stays a replay, even resent.
		if r := b.order(2, k2, body); r.Status != 200 {
			t.Fatalf("resend of replayed key: %d %s", r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond)
		c := s.guest(sess)
		rep := body
		rep = cart(line("ramen", 2, "egg"))
		rep["allowRepeat"] = true
		r = c.order(2, newKey(), rep)
		var o3 success
		r.json(t, &o3)
		if r.Status != 200 || o3.IdempotentReplay || o3.OrderID == o1.OrderID {
			t.Fatalf("allowRepeat: %d %s", r.Status, r.Body)
		}
		if n := len(a.history(0, "")); n != 2 {
			t.Fatalf("want 2 orders, got %d", n)
		}
	})

	t.Run("12 price mismatch then fixed", func(t *testing.T) {
		g := s.guest(s.openSession("R12"))
		b := cart(line("ramen", 2, "egg"))
		b["expectedTotal"] = 1800
		r := g.order(0, newKey(), b)
		if r.Status != 400 || r.reason(t) != "PRICE_MISMATCH" {
			t.Fatalf("mismatch: %d %s", r.Status, r.Body)
		}
		b["expectedTotal"] = 2040
		if r := g.order(1, newKey(), b); r.Status != 200 {
			t.Fatalf("corrected: %d %s", r.Status, r.Body)
		}
	})

	t.Run("13 out of stock then fixed", func(t *testing.T) {
		g := s.guest(s.openSession("R13"))
		before := *s.stock(0, "gyoza")
		r := g.order(2, newKey(), cart(line("gyoza", int(before)+1)))
		if r.Status != 409 || r.reason(t) != "OUT_OF_STOCK" || !strings.Contains(string(r.Body), "gyoza") {
			t.Fatalf("out of stock: %d %s", r.Status, r.Body)
		}
		if got := *s.stock(1, "gyoza"); got != before {
			t.Fatalf("failed order changed stock %d -> %d", before, got)
		}
		if r := g.order(0, newKey(), cart(line("gyoza", int(before)))); r.Status != 200 {
			t.Fatalf("exact stock: %d %s", r.Status, r.Body)
		}
		if got := *s.stock(2, "gyoza"); got != 0 {
			t.Fatalf("stock after = %d", got)
		}
		s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 10})
	})

	t.Run("english messages", func(t *testing.T) {
		g := s.guest(s.openSession("REN"))
		r := s.do(0, "POST", "/api/guest/sessions/"+g.sess.ID+"/orders", map[string]string{"Accept-Language": "en-US,en;q=0.9",
			"Idempotency-Key": "x", "X-MasterOrder-Client-Id": g.client, "X-Session-PIN": g.sess.PIN}, body)
		if !strings.Contains(string(r.Body), "order key") {
			t.Errorf("english: %s", r.Body)
		}
	})
}

func TestCatalogNotReadyAndNoQuorum(t *testing.T) {
	s := startStore(t, 3, nil)
	sess := s.openSession("Q1")
	g := s.guest(sess)
	r := g.order(1, newKey(), cart(line("ramen", 1)))
	if r.Status != 503 || r.reason(t) != "CATALOG_NOT_READY" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("row 4: %d %s", r.Status, r.Body)
	}
	s.seedMenu()
	li, _ := s.c.WaitLeader(5 * time.Second)
	// Stop two of three: no quorum.
	survivor := (li + 1) % 3
	for i := 0; i < 3; i++ {
		if i != survivor {
			s.c.StopNode(i)
		}
	}
	r = g.order(survivor, newKey(), cart(line("ramen", 1)))
	if r.Status != 503 || r.reason(t) != "NO_QUORUM" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("row 14: %d %s", r.Status, r.Body)
	}
}

func wrongPIN(pin string) string {
	if pin == "0000" {
		return "1111"
	}
	return "0000"
}
