package browsertest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"masterorder/orders/printing/escpos"
	"masterorder/orders/printing/printertest"
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
	oid := s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "gyoza", Quantity: 1, Toppings: []string{}}}, 30*time.Second)
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

	// A reprint from the console queues behind the original; once the
	// printer is found (its address corrected) both print, the reprint
	// marked, decoded from the bytes the printer got.
	st.typeInto("#reprint-order", fmt.Sprint(oid))
	st.click("#reprint-submit")
	st.waitFor("the reprint queued", `(() => {
		const r = document.querySelector('#printers-list tr[data-printer-id="kitchen-1"]');
		return r && r.querySelector('[data-field="queued"]').textContent === '2';
	})()`, 30*time.Second)
	p := printertest.Start(t)
	st.click(`#printers-list tr[data-printer-id="kitchen-1"] button:not(.danger)`)
	eval[bool](st, `(() => { document.querySelector('#printer-addr').value = ''; return true; })()`)
	st.typeInto("#printer-addr", p.Addr)
	st.click("#printer-save")
	st.waitFor("the printer online with its queue printed", `(() => {
		const r = document.querySelector('#printers-list tr[data-printer-id="kitchen-1"]');
		return r && r.dataset.online === 'true' && r.querySelector('[data-field="queued"]').textContent === '0';
	})()`, 60*time.Second)
	_, _, docs := p.Tickets()
	if len(docs) != 2 || docs[0].Has(escpos.MarkReprint) || !docs[1].Has(escpos.MarkReprint) || !docs[0].Has("テーブル P1") || !docs[1].Has("テーブル P1") {
		t.Errorf("printed %d tickets, want the original then the reprint of table P1: %+v", len(docs), docs)
	}
	k.waitFor("the kitchen banner gone", `document.querySelector('#printer-banner').hidden`, 30*time.Second)

	st.click(`#printers-list tr[data-printer-id="kitchen-1"] button.danger`)
	st.waitVisible(`#confirm-dialog[data-kind="delete-printer"]`)
	st.click("#confirm-ok")
	st.waitVisible("#printers-empty")
}
