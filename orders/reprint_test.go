package orders_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"masterorder/orders/printing/escpos"
	"masterorder/orders/printing/printertest"
)

// TestReprintArchivedOrder: after the table paid and housekeeping moved
// its orders to the archive, a reprint still finds the order and prints
// it marked 再発行 / REPRINT (never a second original); an order id that
// never existed stays 404.
func TestReprintArchivedOrder(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	p := printertest.Start(t)
	s.addPrinter("kitchen-1", p.Addr, false)
	sess := s.openSession("T9")
	// The ticket's big number is the day's ticket number.
	id, num := s.staffOrderTicket(t, 1, sess, cart(line("ramen", 1, "egg")))
	waitFor(t, "the ticket", 30*time.Second, func() bool { orig, _, _ := p.Tickets(); return orig[num] == 1 })
	s.mustStaff(1, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", map[string]string{"payment": "cash"})

	li, leader := s.c.WaitLeader(10 * time.Second)
	if err := s.svcs[li].Housekeep(context.Background()); err != nil {
		t.Fatalf("housekeeping: %v", err)
	}
	var live, archived int
	if err := leader.FSM().Query(func(db *sql.DB) error {
		if err := db.QueryRow(`SELECT count(*) FROM orders WHERE order_id = ?`, id).Scan(&live); err != nil {
			return err
		}
		return db.QueryRow(`SELECT count(*) FROM orders_archive WHERE order_id = ?`, id).Scan(&archived)
	}); err != nil || live != 0 || archived != 1 {
		t.Fatalf("order %d: live %d, archived %d (%v): want it archived", id, live, archived, err)
	}

	// Through a follower and the leader alike: the command decides.
	for i := range 2 {
		r := s.staff((li+1+i)%3, "POST", fmt.Sprintf("/api/staff/orders/%d/reprint", id), nil)
		for deadline := time.Now().Add(time.Minute); r.Status == 503 && time.Now().Before(deadline); {
			// A loaded machine lost the leader: a reprint is a marked copy,
			// so one retried after an unknown outcome is at worst one more.
			time.Sleep(200 * time.Millisecond)
			r = s.staff((li+1+i)%3, "POST", fmt.Sprintf("/api/staff/orders/%d/reprint", id), nil)
		}
		if r.Status != 200 {
			t.Fatalf("reprint %d of the archived order: %d %s", i+1, r.Status, r.Body)
		}
		var out struct {
			OrderID int64 `json:"orderId"`
			Queued  int   `json:"queued"`
		}
		r.json(t, &out)
		if out.OrderID != id || out.Queued != 1 {
			t.Errorf("reprint answered %+v, want order %d queued on 1 printer", out, id)
		}
	}
	waitFor(t, "two reprints", time.Minute, func() bool { _, c, _ := p.Tickets(); return c[num] >= 2 })
	orig, _, all := p.Tickets()
	if orig[num] != 1 {
		t.Errorf("order %d printed %d times unmarked, want once", id, orig[num])
	}
	for _, d := range all[1:] {
		if !d.Has(escpos.MarkReprint) || !d.Has("+ 味玉") {
			t.Errorf("reprint %q: want marked %q with the order's lines", d.Lines, escpos.MarkReprint)
		}
	}
	if r := s.staff(0, "POST", "/api/staff/orders/987654321/reprint", nil); r.Status != 404 || r.reason(t) != "ORDER_NOT_FOUND" {
		t.Errorf("reprint of an unknown order: %d %s, want 404 ORDER_NOT_FOUND", r.Status, r.Body)
	}
	s.c.AssertIdentical(time.Minute)
}
