package orders_test

import (
	"testing"
	"time"
)

// Row 3 (closed session → 410) comes before row 5 (a known key replays):
// after a checkout, a resend of an order's key answers 410 through every
// box, also through one whose replica has not applied the checkout yet
// (held back here). That box used to answer 200 with idempotentReplay
// from its replica while a fresh key to another box already got 410: an
// answer given before proposing must be one the cluster would give now.
func TestResendAfterCheckoutToALaggingBoxIsSessionClosed(t *testing.T) {
	h := newHolder()
	s := startStoreWith(t, 3, nil, h.options)
	s.seedMenu()
	sess := s.openSession("C1")
	g := s.guest(sess)
	li, _ := s.c.WaitLeader(10 * time.Second)
	base := "/api/staff/sessions/" + sess.ID + "/checkout"
	// The sequence seen from outside: begin → cancel → order → checkout.
	s.mustStaff(li, "POST", base+"/begin", nil)
	s.mustStaff(li, "POST", base+"/cancel", nil)
	key := newKey()
	if r := g.order(li, key, cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	// Every replica holds the order before one of them is held back, so the
	// resend below is a key that box knows.
	for i := range s.c.Nodes {
		if n := len(g.history(i, "")); n != 1 {
			t.Fatalf("node %d: %d orders in the history, want 1", i, n)
		}
	}
	fi := s.holdFollower(t, h)
	s.mustStaff(li, "POST", base, map[string]string{"payment": "cash"})
	if r := g.order(li, newKey(), cart(line("tea", 2))); r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
		t.Fatalf("new key after checkout: %d %s, want 410 SESSION_CLOSED", r.Status, r.Body)
	}

	done := make(chan resp, 1)
	go func() { done <- g.order(fi, key, cart(line("tea", 1))) }()
	// The lagging box may only answer once it has caught up; let it.
	time.Sleep(300 * time.Millisecond)
	h.let()
	if r := <-done; r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
		t.Fatalf("old key resent to the box lagging the checkout: %d %s, want 410 SESSION_CLOSED", r.Status, r.Body)
	}
	for i := range s.c.Nodes {
		if r := g.order(i, key, cart(line("tea", 1))); r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
			t.Fatalf("node %d: old key after checkout: %d %s, want 410 SESSION_CLOSED", i, r.Status, r.Body)
		}
	}
}
