package orders_test

import (
	"testing"
	"time"
)

// A guest's resend of an order that committed, to a box that cannot catch
// up with the cluster (no quorum), is never refused by the cooldown that
// very order set: the box cannot tell, so the resend is proposed and
// Apply replays the key (here: 503 until a quorum is back). A 429 would
// tell the guest to wait and order again — the same order twice in the
// kitchen. Seen under a CPU hog in the backup storm test, where the
// catch-up timed out during an election.
func TestResendWithoutQuorumIsNotRefusedByItsOwnCooldown(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("R1")
	li, _ := s.c.WaitLeader(10 * time.Second)
	s.c.WaitConverged(20 * time.Second)
	g := s.guest(sess)
	key := newKey()
	body := cart(line("ramen", 1))
	if r := g.order(li, key, body); r.Status != 200 {
		t.Fatalf("first order: %d %s", r.Status, r.Body)
	}
	s.c.WaitConverged(20 * time.Second)
	// Keep one follower; stop the other two boxes.
	keep := (li + 1) % 3
	for i := range 3 {
		if i != keep {
			s.c.StopNode(i)
		}
	}
	r := g.order(keep, key, body)
	if r.Status == 429 {
		t.Fatalf("resend of a committed order without quorum: %d %s (refused by its own cooldown)", r.Status, r.Body)
	}
	if r.Status != 503 && r.Status != 200 {
		t.Fatalf("resend without quorum: %d %s, want 503 (or its replay)", r.Status, r.Body)
	}
}
