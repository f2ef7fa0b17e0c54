package browsertest

import (
	"fmt"
	"testing"
	"time"
)

type device struct {
	name string
	w, h int64
}

var devices = []device{{"phone", phoneW, phoneH}, {"tablet", tabletW, tabletH}}

// TestScreenshots saves what the guest, kitchen and staff pages show at
// phone and tablet widths, with a store in the middle of an evening (eight
// open tables, orders in every kitchen state), under the repository's
// screenshots/ folder: <app>-<screen>-<device>.png. Every screenshot
// checks the layout first (checkLayout: no sideways scrolling, no badge
// broken over lines, no toast over a banner); on a phone, tapping a table
// in the staff list must bring its card (QR, PIN) into view.
func TestScreenshots(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()

	// The evening so far: eight tables open, three with orders in every
	// state.
	tables := map[string]session{}
	for _, id := range []string{"T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9"} {
		tables[id] = s.openSession(n, id)
	}
	ids := []int64{
		s.guestOrder([]int{n}, tables["T2"], []orderLine{{MenuID: "tonkotsu", Quantity: 2, Toppings: []string{"egg", "nori"}}, {MenuID: "gyoza", Quantity: 1, Toppings: []string{}}}, 10*time.Second),
		s.guestOrder([]int{n}, tables["T3"], []orderLine{{MenuID: "shio", Quantity: 1, Toppings: []string{"menma"}}, {MenuID: "chahan", Quantity: 1, Toppings: []string{}}, {MenuID: "oolong", Quantity: 3, Toppings: []string{}}}, 10*time.Second),
		s.guestOrder([]int{n}, tables["T4"], []orderLine{{MenuID: "tsukemen", Quantity: 1, Toppings: []string{"chashu"}}}, 10*time.Second),
		s.guestOrder([]int{n}, tables["T4"], []orderLine{{MenuID: "beer", Quantity: 2, Toppings: []string{}}}, 10*time.Second),
	}
	for i, status := range []string{"COOKING", "READY", "SERVED"} {
		if r := s.staff(n, "PATCH", fmt.Sprintf("/api/staff/orders/%d", ids[i+1]), map[string]string{"status": status}); r.status != 200 {
			t.Fatalf("order %d → %s: %d %s", ids[i+1], status, r.status, r.body)
		}
	}

	var saved []string
	shot := func(tb *tab, name string) {
		t.Helper()
		saved = append(saved, tb.screenshot(name))
	}

	for k, d := range devices {
		node := (n + k) % 3 // the pages come from different nodes

		// ---- guest: a table of its own per device
		sess := s.openSession(n, fmt.Sprintf("G%d", k+1))
		g := b.open("guest-"+d.name, s.url(node)+"/guest/?s="+sess.SessionID, d.w, d.h)
		g.waitVisible("#screen-pin")
		shot(g, "guest-pin-"+d.name)
		g.typeInto("#pin-input", sess.PIN)
		g.click("#pin-submit")
		g.waitVisible(`[data-item-id="chashudon"]`)
		shot(g, "guest-menu-"+d.name)
		g.click(`button[data-menu-id="miso"]`)
		g.waitVisible("#topping-sheet")
		g.click(`#sheet-toppings [data-topping-id="chashu"]`)
		g.click(`#sheet-toppings [data-topping-id="garlic"]`)
		shot(g, "guest-toppings-"+d.name)
		g.click("#sheet-add")
		g.waitFor("the sheet closed", `document.querySelector('#topping-sheet').hidden`, 5*time.Second)
		g.click(`button[data-menu-id="karaage"]`)
		g.click(`button[data-menu-id="beer"]`)
		g.waitFor("cart count 3", `document.querySelector('#cart-count').textContent === '3'`, 5*time.Second)
		g.do(scrollTop())
		g.click("#nav-cart")
		g.waitVisible("#cart-confirm")
		shot(g, "guest-cart-"+d.name)
		g.click("#cart-confirm")
		g.waitVisible("#screen-done")
		shot(g, "guest-done-"+d.name)
		g.click("#done-history")
		g.waitVisible("#order-history li[data-order-id]")
		shot(g, "guest-history-"+d.name)

		// ---- kitchen
		kt := b.open("kitchen-"+d.name, s.url(node)+"/kitchen/", d.w, d.h)
		kt.waitVisible("#login-form")
		shot(kt, "kitchen-login-"+d.name)
		kt.login()
		kt.waitFor("the kitchen stream live", `document.querySelector('#conn-status').dataset.state === 'live'`, 10*time.Second)
		kt.waitFor("four open tickets and a served one", `document.querySelectorAll('#order-board [data-order-id]').length >= 4`, 5*time.Second)
		kt.waitFor("the toasts gone", `document.querySelector('#toast').hidden`, 6*time.Second)
		shot(kt, "kitchen-board-"+d.name)
		kt.click("#soldout-open")
		kt.waitVisible(`[data-soldout-menu-id="chashudon"][data-soldout="true"]`)
		shot(kt, "kitchen-soldout-"+d.name)

		// ---- staff
		st := b.open("staff-"+d.name, s.url(node)+"/staff/", d.w, d.h)
		st.waitVisible("#login-form")
		shot(st, "staff-login-"+d.name)
		st.login()
		st.waitVisible(`#sessions-list tr[data-table-id="T4"]`)
		shot(st, "staff-tables-"+d.name)
		eval[bool](st, barsJS+"true")
		st.click(`#sessions-list tr[data-table-id="T4"] [data-action="show"]`)
		st.waitFor("the QR code", `document.querySelector('#session-qr').complete && document.querySelector('#session-qr').naturalWidth > 0`, 5*time.Second)
		// On a phone the card is above the list: the tap must bring it
		// into view, below the sticky bars.
		st.waitFor("the session card in view below the bars", `(() => {
			const top = document.querySelector('#session-detail').getBoundingClientRect().top;
			return top >= barsBottom() - 1 && top < innerHeight - 100;
		})()`, 3*time.Second)
		shot(st, "staff-session-"+d.name)
		st.click("#checkout-begin")
		st.waitVisible(`#checkout-orders tr[data-order-id]`)
		st.scrollBelowBars("#checkout-panel")
		shot(st, "staff-checkout-"+d.name)
		st.click("#checkout-cancel")
		st.waitFor("the checkout panel closed", `document.querySelector('#checkout-panel').hidden`, 5*time.Second)
		for _, tabName := range []string{"menu", "stock", "audit", "cluster"} {
			st.do(scrollTop())
			st.click("#tab-" + tabName)
			st.waitVisible("#page-" + tabName)
			switch tabName {
			case "menu":
				st.waitVisible(`#menu-list tr[data-menu-id="shoyu"]`)
			case "stock":
				st.waitVisible(`#stock-list tr[data-sku="egg"]`)
			case "audit":
				st.waitVisible(`#audit-list tr[data-request-id]`)
				// placed orders read as accepted, refusals as their reason
				if got := st.text(`#audit-list tr[data-reason-code="ADMITTED"] .status`); got != "受付" {
					t.Errorf("audit: a placed order reads %q, want 受付", got)
				}
			case "cluster":
				st.waitFor("three nodes listed", `document.querySelectorAll('#cluster-nodes tr[data-node-id]').length === 3`, 5*time.Second)
			}
			shot(st, "staff-"+tabName+"-"+d.name)
		}
	}
	t.Logf("%d screenshots in %s", len(saved), screenshotDir(t))
}
