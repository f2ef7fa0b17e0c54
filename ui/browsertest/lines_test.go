package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ticketOf is an order's ticket number as node i answers it.
func (s *store) ticketOf(i int, sess session, orderID int64) int64 {
	s.t.Helper()
	r := s.call(i, "GET", "/api/guest/sessions/"+sess.SessionID+"/orders?limit=200", map[string]string{"X-Session-PIN": sess.PIN}, nil)
	var out struct {
		Orders []struct{ OrderID, TicketNo int64 }
	}
	r.decode(s.t, &out)
	for _, o := range out.Orders {
		if o.OrderID == orderID {
			return o.TicketNo
		}
	}
	s.t.Fatalf("order %d not in %s's history on node %d", orderID, sess.TableID, i)
	return 0
}

// guestAt opens the guest app of sess from base and enters the PIN, up
// to the menu.
func (b *browser) guestAt(name, base string, sess session, w, h int64) *tab {
	g := b.open(name, base+"/guest/?s="+sess.SessionID, w, h)
	g.waitVisible("#screen-pin")
	g.typeInto("#pin-input", sess.PIN)
	g.click("#pin-submit")
	g.waitVisible("#screen-menu")
	g.waitVisible(`[data-item-id="hakata"]`)
	return g
}

// chooseStation picks a station on a kitchen screen, once the picker
// knows it (it loads the menu's stations).
func (tb *tab) chooseStation(station string) {
	tb.t.Helper()
	tb.waitFor("station "+station+" in the picker", fmt.Sprintf(`!!document.querySelector('#station-select option[value=%q]')`, station), 10*time.Second)
	eval[bool](tb, fmt.Sprintf(`(() => { const s = document.querySelector('#station-select'); s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, station))
	tb.waitFor("the stream live for "+station, `document.querySelector('#conn-status').dataset.state === 'live'`, 10*time.Second)
}

// TestGuestOptionsStationsAndTicketNumbers is one order with a required
// choice and a note, through the browsers:
//
//  1. a guest on a phone opens the Hakata ramen: the sheet marks the
//     firmness as required and will not add until it is chosen; the price
//     follows the choices; the guest picks firm noodles and spicy miso,
//     writes "ネギ抜き", adds a beer and orders; the done screen calls
//     out number 1;
//  2. the noodle station's screen shows the ramen line with its options
//     and note and not the beer; the drinks station's the beer only; a
//     station screen remembers its station across a reload;
//  3. both stations bump: the order is READY in the guest's history;
//  4. ticket numbers go 2, 3, and start at 1 again after a day close.
func TestGuestOptionsStationsAndTicketNumbers(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	g := (n + 1) % 3
	sess := s.openSession(g, "L1")

	noodles := b.open("kitchen-noodles", s.url(n)+"/kitchen/", tabletW, tabletH)
	noodles.login()
	noodles.chooseStation("noodles")
	drinks := b.open("kitchen-drinks", s.url((n+2)%3)+"/kitchen/", phoneW, phoneH)
	drinks.login()
	drinks.chooseStation("drinks")

	// ---- 1. the guest
	guest := b.guestAt("guest-lines", s.url(g), sess, phoneW, phoneH)
	guest.click(`button[data-menu-id="hakata"]`)
	guest.waitVisible("#topping-sheet")
	guest.waitVisible(`#sheet-options fieldset[data-group-id="firmness"].is-required.is-missing`)
	if !eval[bool](guest, `document.querySelector('#sheet-add').disabled`) {
		t.Errorf("the add button is enabled before the firmness is chosen")
	}
	if got := guest.text("#sheet-add"); !strings.Contains(got, "麺のかたさ") {
		t.Errorf("add button %q does not ask for the firmness", got)
	}
	guest.screenshot("lines-guest-sheet-required-phone")
	guest.click(`#sheet-options input[data-group-id="firmness"][data-option-id="firm"]`)
	guest.waitFor("the add button enabled at ¥950", `!document.querySelector('#sheet-add').disabled && document.querySelector('#sheet-add').textContent.includes('¥950')`, 5*time.Second)
	guest.click(`#sheet-options input[data-group-id="extras"][data-option-id="spicy"]`)
	guest.waitFor("the price with spicy miso", `document.querySelector('#sheet-add').textContent.includes('¥1,050')`, 5*time.Second)
	guest.typeInto("#sheet-note", "ネギ抜き")
	guest.screenshot("lines-guest-sheet-chosen-phone")
	guest.click("#sheet-add")
	guest.waitFor("the sheet closed", `document.querySelector('#topping-sheet').hidden`, 5*time.Second)
	guest.click(`button[data-menu-id="beer"]`)
	guest.waitFor("cart count 2", `document.querySelector('#cart-count').textContent === '2'`, 5*time.Second)
	guest.do(scrollTop())
	guest.click("#nav-cart")
	guest.waitVisible("#cart-confirm")
	cart := guest.text("#cart-lines")
	for _, want := range []string{"博多ラーメン", "・かため", "・辛味噌", "※ ネギ抜き", "生ビール"} {
		if !strings.Contains(cart, want) {
			t.Errorf("cart %q lacks %q", cart, want)
		}
	}
	if got := guest.text("#cart-total"); got != "¥1,650" {
		t.Errorf("cart total %q, want ¥1,650", got)
	}
	guest.screenshot("lines-guest-cart-phone")
	guest.click("#cart-confirm")
	guest.waitVisible("#screen-done")
	if got := guest.text("#done-ticket"); !strings.Contains(got, "1") {
		t.Errorf("done screen ticket %q, want number 1", got)
	}
	guest.screenshot("lines-guest-done-phone")
	_, list := s.guestOrders(g, sess)
	if len(list) != 1 {
		t.Fatalf("%d orders, want 1", len(list))
	}
	id := list[0].OrderID
	if tn := s.ticketOf(n, sess, id); tn != 1 {
		t.Errorf("first order's ticket %d, want 1", tn)
	}

	// ---- 2. each station its lines
	sel := fmt.Sprintf(`#order-board [data-order-id="%d"]`, id)
	noodles.waitVisible(sel)
	drinks.waitVisible(sel)
	nt, dt := noodles.text(sel), drinks.text(sel)
	for _, want := range []string{"No.1", "博多ラーメン", "・かため", "・辛味噌", "※ ネギ抜き"} {
		if !strings.Contains(nt, want) {
			t.Errorf("noodle ticket %q lacks %q", nt, want)
		}
	}
	if strings.Contains(nt, "生ビール") {
		t.Errorf("noodle ticket %q shows the beer", nt)
	}
	if !strings.Contains(dt, "生ビール") || !strings.Contains(dt, "No.1") || strings.Contains(dt, "博多") {
		t.Errorf("drinks ticket %q, want the beer only, number 1", dt)
	}
	if !noodles.visible(sel + " .line-note") {
		t.Errorf("the note is not highlighted on the noodle screen")
	}
	noodles.screenshot("lines-kitchen-noodles-tablet")
	drinks.screenshot("lines-kitchen-drinks-phone")
	noodles.do(chromedp.Reload())
	noodles.waitFor("the station remembered", `document.querySelector('#station-select') && document.querySelector('#station-select').value === 'noodles'`, 10*time.Second)
	noodles.waitVisible(sel)
	if strings.Contains(noodles.text(sel), "生ビール") {
		t.Errorf("after a reload the noodle screen shows the beer")
	}

	// ---- 3. both bump → READY
	noodles.click(sel + ` [data-action="station-bump"]`)
	noodles.waitFor("the ticket off the noodle board", fmt.Sprintf(`!document.querySelector(%q)`, sel), 10*time.Second)
	if _, l := s.guestOrders(n, sess); len(l) != 1 || l[0].Status != "ACCEPTED" {
		t.Errorf("after one station's bump: %+v, want ACCEPTED", l)
	}
	drinks.click(sel + ` [data-action="station-bump"]`)
	drinks.waitFor("the ticket off the drinks board", fmt.Sprintf(`!document.querySelector(%q)`, sel), 10*time.Second)
	guest.click("#done-history")
	guest.waitFor("READY in the guest's history", fmt.Sprintf(`!!document.querySelector('#order-history li[data-order-id="%d"][data-status="READY"]')`, id), 30*time.Second)
	if got := guest.text(fmt.Sprintf(`#order-history li[data-order-id="%d"]`, id)); !strings.Contains(got, "No.1") || !strings.Contains(got, "ネギ抜き") {
		t.Errorf("history entry %q lacks the ticket number or the note", got)
	}
	guest.screenshot("lines-guest-history-phone")

	// ---- 4. ticket numbers 2, 3; 1 again after a day close
	place := func(table string) (session, int64) {
		ss := s.openSession(n, table)
		id := s.guestOrder([]int{g}, ss, []orderLine{{MenuID: "hakata", Quantity: 1, Toppings: []string{}, Options: map[string][]string{"firmness": {"soft"}}}}, 20*time.Second)
		return ss, id
	}
	for want := int64(2); want <= 3; want++ {
		ss, oid := place(fmt.Sprintf("L%d", want))
		if tn := s.ticketOf(g, ss, oid); tn != want {
			t.Errorf("ticket %d, want %d", tn, want)
		}
		noodles.waitFor(fmt.Sprintf("No.%d on the noodle screen", want), fmt.Sprintf(`(document.querySelector('#order-board [data-order-id="%d"] .ticket-no') || {}).textContent === 'No.%d'`, oid, want), 10*time.Second)
	}
	if r := s.staff(n, "POST", "/api/staff/days/close?force=true", nil); r.status != 200 {
		t.Fatalf("day close: %d %s", r.status, r.body)
	}
	ss, oid := place("L9")
	if tn := s.ticketOf(n, ss, oid); tn != 1 {
		t.Errorf("after the day close: ticket %d, want 1", tn)
	}
	noodles.waitFor("No.1 again on the noodle screen", fmt.Sprintf(`(document.querySelector('#order-board [data-order-id="%d"] .ticket-no') || {}).textContent === 'No.1'`, oid), 10*time.Second)

	// The item sheet at tablet width too.
	tabletGuest := b.guestAt("guest-lines-tablet", s.url(n), ss, tabletW, tabletH)
	tabletGuest.click(`button[data-menu-id="hakata"]`)
	tabletGuest.waitVisible("#topping-sheet")
	tabletGuest.screenshot("lines-guest-sheet-tablet")
}
