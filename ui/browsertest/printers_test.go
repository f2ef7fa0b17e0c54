package browsertest

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestPrintersPageAndKitchenWarning: the manager adds a printer on the
// staff console; it is switched off, so an order's ticket queues: the
// console shows it offline with its queue and error, the kitchen screen
// warns; deleting it from the console removes it.
func TestPrintersPageAndKitchenWarning(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	// A free port with nothing listening: a printer that is off.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	st := b.open("staff", s.url(n)+"/staff/#printers", tabletW, tabletH)
	st.login()
	st.waitVisible("#page-printers")
	st.typeInto("#printer-id", "kitchen-1")
	st.typeInto("#printer-name", "Kitchen")
	st.typeInto("#printer-addr", addr)
	st.click("#printer-save")
	st.waitVisible(`#printers-list tr[data-printer-id="kitchen-1"]`)

	sess := s.openSession(n, "P1")
	s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "gyoza", Quantity: 1, Toppings: []string{}}}, 10*time.Second)
	st.waitFor("the printer offline with a queued ticket", `(() => {
		const r = document.querySelector('#printers-list tr[data-printer-id="kitchen-1"]');
		return r && r.dataset.online === 'false' && r.querySelector('[data-field="queued"]').textContent === '1';
	})()`, 30*time.Second)

	st.screenshot("staff-printers-offline-tablet")
	// The same page on a phone, from another box: the row, its state
	// and its queue readable without sideways scrolling.
	ph := b.open("staff-phone", s.url((n+1)%3)+"/staff/#printers", phoneW, phoneH)
	ph.login()
	ph.waitFor("the printer offline on the phone", `(() => {
		const r = document.querySelector('#printers-list tr[data-printer-id="kitchen-1"]');
		return r && r.dataset.online === 'false';
	})()`, 30*time.Second)
	ph.scrollBelowBars("#printers-list")
	ph.screenshot("staff-printers-offline-phone")

	k := b.open("kitchen", s.url(n)+"/kitchen/", tabletW, tabletH)
	k.login()
	k.waitVisible("#printer-banner")
	if txt := k.text("#printer-banner"); !strings.Contains(txt, "Kitchen") {
		t.Errorf("kitchen banner %q does not name the printer", txt)
	}
	k.screenshot("flow-kitchen-printer-offline-tablet")

	st.click(`#printers-list tr[data-printer-id="kitchen-1"] button.danger`)
	st.waitVisible(`#confirm-dialog[data-kind="delete-printer"]`)
	st.click("#confirm-ok")
	st.waitVisible("#printers-empty")
}
