package orders_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/orders"
	"masterorder/orders/printing/escpos"
	"masterorder/orders/printing/printertest"
)

type printerView struct {
	PrinterID string   `json:"printerId"`
	Addr      string   `json:"addr"`
	Stations  []string `json:"stations"`
	Online    bool     `json:"online"`
	LastError *string  `json:"lastError"`
	Queued    int64    `json:"queued"`
}

func (s *store) printers(i int) []printerView {
	s.t.Helper()
	var out struct{ Printers []printerView }
	s.mustStaff(i, "GET", "/api/staff/printers", nil).json(s.t, &out)
	return out.Printers
}

func (s *store) addPrinter(id, addr string, receipts bool) {
	s.t.Helper()
	s.mustStaff(s.running(0), "PUT", "/api/staff/printers/"+id, map[string]any{"addr": addr, "stations": []string{"kitchen"}, "receipts": receipts, "name": "厨房"})
}

// staffOrder places an order as staff, retrying with the same key until
// it is acknowledged (a replay answers the first order).
func (s *store) staffOrder(t *testing.T, node int, sess session, body any) int64 {
	id, _ := s.staffOrderTicket(t, node, sess, body)
	return id
}

// staffOrderTicket is staffOrder with the order's ticket number (what a
// ticket prints big), as a string.
func (s *store) staffOrderTicket(t *testing.T, node int, sess session, body any) (int64, string) {
	key := newKey()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		// Nodes in turn, not s.running: a fault goroutine stops and
		// starts nodes meanwhile; a stopped one just refuses.
		r := s.do(node%len(s.c.Configs), "POST", "/api/staff/orders?sessionId="+sess.ID, map[string]string{
			"Authorization": "Bearer " + s.token, "Idempotency-Key": key}, body)
		if r.Status == 200 {
			var out struct{ OrderID, TicketNo int64 }
			r.json(t, &out)
			return out.OrderID, fmt.Sprint(out.TicketNo)
		}
		if r.Status > 0 && r.Status < 500 && r.Status != 409 && r.Status != 429 {
			t.Errorf("staff order: %d %s", r.Status, r.Body)
			return 0, ""
		}
		time.Sleep(200 * time.Millisecond)
		node++
	}
	t.Errorf("staff order never acknowledged")
	return 0, ""
}

// TestPrintTicketDecoded: what a cook reads off the paper, decoded from
// the byte stream (ticket number, table, every line with its options and
// note, in Japanese), each printer its stations' lines only; reprints are
// marked; the API's errors.
func TestPrintTicketDecoded(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	s.seedLinesMenu()
	p, bar := printertest.Start(t), printertest.Start(t)
	s.mustStaff(0, "PUT", "/api/staff/printers/kitchen-1", map[string]any{"addr": p.Addr, "stations": []string{"noodles", "kitchen"}, "name": "厨房"})
	s.mustStaff(1, "PUT", "/api/staff/printers/bar", map[string]any{"addr": bar.Addr, "stations": []string{"drinks"}, "name": "ドリンク"})
	sess := s.openSession("T7")
	ramen := line("ramen", 2, "egg", "nori")
	ramen["options"] = map[string][]string{"firmness": {"firm"}, "extras": {"garlic"}}
	ramen["note"] = "ネギ抜き"
	id, num := s.staffOrderTicket(t, 0, sess, cart(ramen, line("gyoza", 1), line("beer", 1)))
	if num != "1" {
		t.Errorf("the day's first order has ticket %s, want 1", num)
	}
	doc := firstTicket(t, p, num, "the ticket")
	if !doc.Kanji || !doc.SJIS {
		t.Errorf("kanji mode %v, Shift_JIS %v", doc.Kanji, doc.SJIS)
	}
	if len(doc.Double) == 0 || doc.Double[0] != "No."+num {
		t.Errorf("big line %q, want No.%s", doc.Double, num)
	}
	for _, want := range []string{"テーブル T7", "2 x 醤油ラーメン", "・かため", "・にんにく", "+ 味玉", "+ 海苔", "※ ネギ抜き", "1 x 餃子"} {
		if !doc.Has(want) {
			t.Errorf("ticket lacks %q: %q", want, doc.Lines)
		}
	}
	if doc.Has("1 x 生ビール") {
		t.Errorf("the noodle printer got the drinks line: %q", doc.Lines)
	}
	drinks := firstTicket(t, bar, num, "the drinks ticket")
	if len(drinks.Double) == 0 || drinks.Double[0] != "No."+num || !drinks.Has("テーブル T7") || !drinks.Has("1 x 生ビール") ||
		drinks.Has("2 x 醤油ラーメン") || drinks.Has("1 x 餃子") {
		t.Errorf("drinks ticket: big %q, lines %q; want No.%s, the beer only", drinks.Double, drinks.Lines, num)
	}
	waitFor(t, "printers online, queues empty", 30*time.Second, func() bool {
		ps := s.printers(0)
		return len(ps) == 2 && ps[0].Online && ps[0].Queued == 0 && ps[0].LastError == nil && ps[1].Online && ps[1].Queued == 0
	})

	s.mustStaff(0, "POST", fmt.Sprintf("/api/staff/orders/%d/reprint", id), nil)
	waitFor(t, "the reprint", 30*time.Second, func() bool { _, c, _ := p.Tickets(); return c[num] == 1 })
	if orig, _, all := p.Tickets(); orig[num] != 1 || !all[len(all)-1].Has(escpos.MarkReprint) {
		t.Errorf("originals %d, last %q", orig[num], all[len(all)-1].Lines)
	}

	for _, c := range []struct {
		method, path string
		body         any
		status       int
		reason       string
	}{
		{"POST", "/api/staff/orders/999999/reprint", nil, 404, "ORDER_NOT_FOUND"},
		{"DELETE", "/api/staff/printers/nope", nil, 404, "PRINTER_NOT_FOUND"},
		{"PUT", "/api/staff/printers/bad%20id", map[string]any{"addr": "127.0.0.1:9100"}, 400, "INVALID_ID"},
		{"PUT", "/api/staff/printers/p1", map[string]any{"addr": "no-port"}, 400, "INVALID_REQUEST"},
		{"PUT", "/api/staff/printers/p1", map[string]any{"addr": "h:9100", "stations": []string{"bad station"}}, 400, "INVALID_REQUEST"},
		{"PUT", "/api/staff/printers/p1", map[string]any{"addr": "h:9100", "name": strings.Repeat("x", 65)}, 400, "INVALID_REQUEST"},
	} {
		r := s.staff(0, c.method, c.path, c.body)
		if r.Status != c.status || r.reason(t) != c.reason {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, r.Status, r.Body, c.status, c.reason)
		}
	}
	s.mustStaff(0, "DELETE", "/api/staff/printers/kitchen-1", nil)
	if ps := s.printers(0); len(ps) != 1 || ps[0].PrinterID != "bar" {
		t.Errorf("after delete: %+v", ps)
	}
}

// TestPrintFaults: a printer that refuses, stalls or resets mid-job gets
// a bounded timeout and a retry; its queue shows meanwhile; a resend is
// marked as a copy, never a second original.
func TestPrintFaults(t *testing.T) {
	t.Cleanup(orders.SetPrintIO(time.Second, 2*time.Second)) // after the nodes stop
	s := startStore(t, 3, nil)
	s.seedMenu()
	p := printertest.Start(t)
	s.addPrinter("k", p.Addr, false)
	sess := s.openSession("T1")
	for _, mode := range []int{-1, printertest.Stall, printertest.Reset, printertest.ResetDone} {
		if mode < 0 {
			p.Off()
		} else {
			p.SetMode(mode)
		}
		_, id := s.staffOrderTicket(t, 0, sess, cart(line("tea", 1)))
		waitFor(t, fmt.Sprintf("mode %d: queued, offline with an error", mode), 60*time.Second, func() bool {
			ps := s.printers(0)
			return len(ps) == 1 && ps[0].Queued >= 1 && !ps[0].Online && ps[0].LastError != nil
		})
		if mode < 0 {
			if ps := s.printers(0); *ps[0].LastError != "connect: connection refused" {
				t.Errorf("a printer that is off: lastError %q", *ps[0].LastError)
			}
			p.On()
		} else {
			p.Off() // drop the stalled connection
			p.SetMode(printertest.OK)
			p.On()
		}
		waitFor(t, fmt.Sprintf("mode %d: printed when back", mode), 60*time.Second, func() bool {
			ps := s.printers(0)
			orig, cp, _ := p.Tickets()
			return orig[id]+cp[id] >= 1 && ps[0].Queued == 0 && ps[0].Online
		})
		orig, cp, _ := p.Tickets()
		if orig[id] > 1 {
			t.Errorf("mode %d: order %s printed %d times unmarked", mode, id, orig[id])
		}
		if mode == -1 && (orig[id] != 1 || cp[id] != 0) {
			t.Errorf("refused printer: %d originals %d copies, want 1 and 0", orig[id], cp[id])
		}
		if mode == printertest.ResetDone && (cp[id] < 1 || orig[id] != 1) {
			t.Errorf("reset before confirming: %d originals %d copies, want 1 and the resends marked", orig[id], cp[id])
		}
	}
}

// TestPrintExactlyOnceUnderFaults: orders through every node while the
// leader is stopped twice and the printer is off for 10 s, then resets
// at random: every acknowledged order's ticket prints, never twice
// unmarked.
func TestPrintExactlyOnceUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault run")
	}
	t.Cleanup(orders.SetPrintIO(time.Second, 3*time.Second)) // after the nodes stop
	s := startStore(t, 3, nil)
	s.seedMenu()
	p := printertest.Start(t)
	s.addPrinter("k", p.Addr, false)
	sessions := make([]session, 6)
	for i := range sessions {
		sessions[i] = s.openSession(fmt.Sprintf("T%d", i+1))
	}
	const total = 150
	var mu sync.Mutex
	var acked []string // ticket numbers
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := range next {
				if id, ticket := s.staffOrderTicket(t, n, sessions[w], cart(line("tea", 1))); id != 0 {
					mu.Lock()
					acked = append(acked, ticket)
					mu.Unlock()
				}
			}
		}(w)
	}
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		for k := 0; k < 2; k++ {
			time.Sleep(2 * time.Second)
			li, _ := s.c.WaitLeader(30 * time.Second)
			s.c.StopNode(li)
			if k == 0 {
				p.Off()
			}
			time.Sleep(3 * time.Second)
			s.c.StartNode(li)
		}
		time.Sleep(4 * time.Second) // printer off ~10 s in all
		p.SetMode(printertest.Flaky)
		p.On()
	}()
	for i := 0; i < total; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	<-faults
	if len(acked) != total {
		t.Fatalf("%d of %d orders acknowledged", len(acked), total)
	}
	time.Sleep(2 * time.Second)
	p.SetMode(printertest.OK)
	waitFor(t, "every ticket printed", 3*time.Minute, func() bool {
		orig, cp, _ := p.Tickets()
		for _, id := range acked {
			if n := id; orig[n]+cp[n] == 0 {
				return false
			}
		}
		return true
	})
	orig, cp, _ := p.Tickets()
	copies := 0
	for _, id := range acked {
		n := id
		if orig[n] > 1 {
			t.Errorf("ticket %s printed %d times unmarked", n, orig[n])
		}
		copies += cp[n]
	}
	t.Logf("%d orders, %d originals, %d marked copies", len(acked), len(orig), copies)
	waitFor(t, "queues empty on every node", time.Minute, func() bool {
		for i := range s.c.Nodes {
			if s.c.Nodes[i] == nil {
				continue
			}
			if ps := s.printers(i); len(ps) != 1 || ps[0].Queued != 0 {
				return false
			}
		}
		return true
	})
	s.c.AssertIdentical(time.Minute)
}

// TestPrintReceiptAtCheckout: a receipts printer prints the bill at
// checkout (total, tax included, payment; each line's options and
// toppings, not the kitchen's note); a kitchen-only printer does not.
func TestPrintReceiptAtCheckout(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	s.seedLinesMenu()
	kitchen, till := printertest.Start(t), printertest.Start(t)
	s.mustStaff(0, "PUT", "/api/staff/printers/k", map[string]any{"addr": kitchen.Addr, "stations": []string{"kitchen", "noodles", "drinks"}, "receipts": false, "name": "厨房"})
	s.mustStaff(0, "PUT", "/api/staff/printers/till", map[string]any{"addr": till.Addr, "stations": []string{}, "receipts": true, "name": "レジ"})
	sess := s.openSession("T3")
	ramen := ramenLine(1, map[string][]string{"firmness": {"firm"}, "extras": {"spicy"}}, "ネギ抜き")
	ramen["toppings"] = []string{"egg"}
	s.staffOrder(t, 0, sess, cart(ramen, line("tea", 2)))
	s.mustStaff(1, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", map[string]string{"payment": "card"})
	var receipt escpos.Printed
	waitFor(t, "the receipt", 30*time.Second, func() bool {
		_, _, all := till.Tickets()
		if len(all) > 0 {
			receipt = all[0]
			return true
		}
		return false
	})
	// 900+120+100 + 2×300 = 1720, of which 10 % tax: 1720×10/110 = 156.
	for _, want := range []string{"領収書 / RECEIPT", "テーブル T3", "醤油ラーメン x1  1120円", "  ・かため", "  ・辛味", "  + 味玉", "烏龍茶 x2  600円", "合計 1720円", "(内消費税 156円)", "支払 card"} {
		if !receipt.Has(want) {
			t.Errorf("receipt lacks %q: %q", want, receipt.Lines)
		}
	}
	if receipt.Has("ネギ抜き") {
		t.Errorf("the receipt prints the kitchen's note: %q", receipt.Lines)
	}
	waitFor(t, "the kitchen ticket", 30*time.Second, func() bool { _, _, all := kitchen.Tickets(); return len(all) == 1 })
	time.Sleep(time.Second)
	if _, _, all := till.Tickets(); len(all) != 1 {
		t.Errorf("the till printed %d documents, want the receipt only", len(all))
	}
	if _, _, all := kitchen.Tickets(); len(all) != 1 || all[0].Has("RECEIPT") {
		t.Errorf("the kitchen printed %d documents, want its ticket only", len(all))
	}
}

// firstTicket waits for printer p to have printed ticket num once and
// returns the first ticket it printed.
func firstTicket(t *testing.T, p *printertest.Printer, num, what string) escpos.Printed {
	t.Helper()
	var doc escpos.Printed
	waitFor(t, what, 30*time.Second, func() bool {
		orig, _, all := p.Tickets()
		if orig[num] == 1 {
			doc = all[0]
			return true
		}
		return false
	})
	return doc
}
