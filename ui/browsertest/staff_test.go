package browsertest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"masterorder/orders/orderstest"
)

// TestStaffOpensTableAndChecksOut: on the staff console a staff user logs
// in, opens table B7 and gets its QR code and PIN; the guest orders with
// that PIN; the staff user begins the checkout (the bill lists the order
// and its total, and the table takes no new orders meanwhile), completes
// it, and the session is closed: every guest call for it answers 410 on
// every node.
func TestStaffOpensTableAndChecksOut(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	f := (n + 1) % 3 // a follower: the console is served by one, the guest orders through another

	st := b.open("staff", s.url(f)+"/staff/", tabletW, tabletH)
	st.login()
	st.waitVisible("#page-tables")
	st.waitFor("the node label", `document.querySelector('#node-label').textContent !== ''`, 5*time.Second)

	// ---- open a table: QR and PIN
	st.typeInto("#open-session-table", "B7")
	st.click("#open-session-submit")
	st.waitVisible("#session-detail")
	if got := st.text("#session-table"); got != "B7" {
		t.Fatalf("session table %q, want B7", got)
	}
	pin := st.text("#session-pin")
	if !regexp.MustCompile(`^\d{4}$`).MatchString(pin) {
		t.Fatalf("session PIN %q, want 4 digits", pin)
	}
	sid := strings.TrimSpace(st.text("#session-id"))
	url := st.text("#session-url")
	if sid == "" || !strings.Contains(url, "/guest/?s="+sid) {
		t.Fatalf("session id %q, guest URL %q: want the URL to open that session", sid, url)
	}
	st.waitFor("the QR code image loaded", `(() => { const i = document.querySelector('#session-qr'); return !i.hidden && i.complete && i.naturalWidth >= 64; })()`, 5*time.Second)
	qr := eval[map[string]float64](st, `(() => { const i = document.querySelector('#session-qr'); return {w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width}; })()`)
	t.Logf("staff: table B7 opened: session %s, PIN %s, QR %vx%v px (shown %v px wide), guest URL %s", sid, pin, qr["w"], qr["h"], qr["shown"], url)
	st.waitVisible(`#sessions-list tr[data-session-id="` + sid + `"][data-table-id="B7"]`)
	st.screenshot("flow-staff-table-opened-tablet")

	// The guest orders with what the console showed.
	b7 := session{SessionID: sid, TableID: "B7", PIN: pin}
	if code, _ := s.guestOrders(n, b7); code != 200 {
		t.Fatalf("guest history with the PIN the console shows: %d", code)
	}
	oid := s.guestOrder([]int{n}, b7, []orderLine{{MenuID: "karaage", Quantity: 1, Toppings: []string{}}, {MenuID: "beer", Quantity: 2, Toppings: []string{}}}, 10*time.Second)
	const total = 550 + 600*2

	// ---- checkout: begin, the bill, complete
	st.click("#checkout-begin")
	st.waitVisible("#checkout-panel")
	st.waitVisible(fmt.Sprintf(`#checkout-orders tr[data-order-id="%d"]`, oid))
	st.waitFor("the bill total", fmt.Sprintf(`document.querySelector('#checkout-total').dataset.total === '%d'`, total), 5*time.Second)
	if got := st.text("#checkout-total"); got != "¥1,750" {
		t.Errorf("bill total %q, want ¥1,750", got)
	}
	if n := eval[int](st, `document.querySelectorAll('#checkout-orders tr[data-order-id]').length`); n != 1 {
		t.Errorf("the bill lists %d orders, want 1", n)
	}
	if st.visible("#session-error") {
		t.Errorf("checkout begin shows an error: %q", st.text("#session-error"))
	}
	st.screenshot("flow-staff-checkout-tablet")
	// The checkout holds the table: a guest order now is refused.
	r := s.call(n, "POST", "/api/guest/sessions/"+sid+"/orders", map[string]string{
		"Idempotency-Key": uuidV4(), "X-MasterOrder-Client-Id": newClientID(), "X-Session-PIN": pin,
	}, map[string]any{"items": []orderLine{{MenuID: "gyoza", Quantity: 1, Toppings: []string{}}}})
	if r.status != 409 || r.reason() != "SESSION_BUSY" {
		t.Errorf("guest order during the checkout: %d %s, want 409 SESSION_BUSY", r.status, r.body)
	}

	st.click("#checkout-complete")
	st.waitVisible(`#confirm-dialog[data-kind="checkout"]`)
	if msg := st.text("#confirm-message"); !strings.Contains(msg, "B7") || !strings.Contains(msg, "¥1,750") {
		t.Errorf("checkout confirmation %q: want the table and the total", msg)
	}
	st.click("#confirm-ok")
	st.waitVisible("#checkout-result")
	if got := eval[string](st, `document.querySelector('#checkout-result').dataset.total`); got != fmt.Sprint(total) {
		t.Errorf("checkout result total %q, want %d (%q)", got, total, st.text("#checkout-result"))
	}
	st.waitFor("B7 gone from the open tables", `!document.querySelector('#sessions-list tr[data-table-id="B7"]')`, 5*time.Second)
	if st.visible("#checkout-begin") || st.visible("#session-qr") {
		t.Errorf("a closed table still offers checkout or its QR code")
	}
	t.Logf("staff: checkout done: %q", st.text("#checkout-result"))
	st.screenshot("flow-staff-checked-out-tablet")

	// ---- the session is CLOSED, on every node
	for i := 0; i < 3; i++ {
		deadline := time.Now().Add(5 * time.Second)
		var r apiResp
		for {
			r = s.call(i, "GET", "/api/guest/sessions/"+sid, map[string]string{"X-Session-PIN": pin}, nil)
			if r.status == 410 || time.Now().After(deadline) {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		if r.status != 410 || r.reason() != "SESSION_CLOSED" {
			t.Errorf("node %d: guest GET of the checked-out session: %d %s, want 410 SESSION_CLOSED", i, r.status, r.body)
		}
	}
	r = s.staff(n, "GET", "/api/staff/sessions?status=CLOSED", nil)
	if r.status != 200 || !strings.Contains(string(r.body), sid) {
		t.Errorf("closed sessions: %d %s, want %s among them", r.status, r.body, sid)
	}
}

// A stranger locks table C3 with fifty wrong PINs; the staff taps "unlock
// table / new PIN" once: the console shows a new PIN, the guests get in
// with it, the old one is refused.
func TestStaffUnlocksTableWithNewPIN(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	for _, dev := range devices {
		st := b.open("staff-"+dev.name, s.url((n+1)%3)+"/staff/", dev.w, dev.h)
		st.login()
		st.waitVisible("#page-tables")
		table := "C3" + dev.name
		st.typeInto("#open-session-table", table)
		st.click("#open-session-submit")
		st.waitVisible("#session-detail")
		sid := strings.TrimSpace(st.text("#session-id"))
		old := st.text("#session-pin")
		sess := session{SessionID: sid, TableID: table, PIN: old}
		wrong := "0000"
		if old == wrong {
			wrong = "1111"
		}
		for i := 0; i < 55; i++ {
			s.call(i%3, "GET", "/api/guest/sessions/"+sid, map[string]string{"X-Session-PIN": wrong, "X-MasterOrder-Client-Id": newClientID()}, nil)
		}
		if code, _ := s.guestOrders(n, sess); code != 429 {
			t.Fatalf("%s: the table is not locked after the attack: %d", dev.name, code)
		}
		st.click("#session-new-pin")
		st.waitVisible("#confirm-dialog")
		if msg := st.text("#confirm-message"); !strings.Contains(msg, table) {
			t.Errorf("%s: confirmation %q does not name the table", dev.name, msg)
		}
		st.screenshot("flow-staff-new-pin-confirm-" + dev.name)
		st.click("#confirm-ok")
		st.waitFor("a new PIN on the card", fmt.Sprintf(`(() => { const p = document.querySelector('#session-pin').textContent; return /^\d{4}$/.test(p) && p !== '%s'; })()`, old), 10*time.Second)
		fresh := st.text("#session-pin")
		st.checkLayout("new PIN " + dev.name)
		st.screenshot("flow-staff-new-pin-" + dev.name)
		if code, _ := s.guestOrders(n, session{SessionID: sid, TableID: table, PIN: fresh}); code != 200 {
			t.Errorf("%s: guests with the new PIN: %d", dev.name, code)
		}
		if code, _ := s.guestOrders(n, sess); code == 200 {
			t.Errorf("%s: the old PIN still opens the table", dev.name)
		}
		t.Logf("%s: table %s unlocked, PIN %s → %s", dev.name, table, old, fresh)
	}
}

const kitchenPassword = "kitchen-screen-pw"

func kitchenHash(t testing.TB) string { return orderstest.PasswordHash(t, kitchenPassword) }

// The kitchen password typed into the staff console: the console says it
// belongs on the kitchen screen instead of opening a page of 403s; on the
// kitchen screen the same password runs the board.
func TestKitchenPasswordOnTheConsole(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	for _, dev := range devices {
		st := b.open("staff-kitchen-"+dev.name, s.url(0)+"/staff/", dev.w, dev.h)
		st.waitVisible("#login-form")
		st.typeInto("#login-password", kitchenPassword)
		st.click("#login-submit")
		st.waitFor("the kitchen-role message", `(() => { const e = document.querySelector('#login-error'); return !e.hidden && e.textContent.includes('/kitchen/'); })()`, 10*time.Second)
		if !st.eval(`!document.querySelector('#login').hidden && document.querySelector('#app').hidden`) {
			t.Errorf("%s: the console opened for a kitchen login", dev.name)
		}
		st.checkLayout("kitchen password on the console " + dev.name)
		st.screenshot("flow-staff-kitchen-password-" + dev.name)
	}
	k := b.open("kitchen-role", s.url(1)+"/kitchen/", tabletW, tabletH)
	k.waitVisible("#login-form")
	k.typeInto("#login-password", kitchenPassword)
	k.click("#login-submit")
	k.waitFor("the kitchen board", `document.querySelector('#login').hidden`, 10*time.Second)
	k.screenshot("flow-kitchen-kitchen-role-tablet")
}

// A kitchen login marks a ramen sold out from the kitchen screen: the
// screen sends the item back as it is but for "available" (its place in
// the menu and its toppings' English names included), which the kitchen
// role may do. The item keeps them.
func TestKitchenLoginSellsOutAnItem(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	k := b.open("kitchen", s.url(0)+"/kitchen/", tabletW, tabletH)
	k.loginAs(kitchenPassword)
	k.click("#soldout-open")
	k.waitVisible(`[data-soldout-menu-id="shoyu"][data-soldout="false"]`)
	k.click(`[data-soldout-menu-id="shoyu"]`)
	k.waitFor("shoyu sold out", `!!document.querySelector('[data-soldout-menu-id="shoyu"][data-soldout="true"]')`, 10*time.Second)
	var menu struct {
		Items []struct {
			MenuID    string
			Available bool
			SortOrder int
			Toppings  []struct{ ToppingID, NameEn string }
		}
	}
	s.staff(0, "GET", "/api/staff/menu", nil).decode(t, &menu)
	for _, it := range menu.Items {
		if it.MenuID == "shoyu" && (it.Available || it.SortOrder != 1 || len(it.Toppings) == 0 || it.Toppings[0].NameEn == "") {
			t.Errorf("shoyu after the kitchen's sold-out: %+v", it)
		}
	}
}
