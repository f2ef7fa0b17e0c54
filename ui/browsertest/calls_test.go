package browsertest

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuestCallsAndReports: at phone and tablet widths a guest taps "Bill
// please" and gets a confirmation; the staff console and the kitchen
// screen show the call live, and "done" on the console clears it on both;
// the Reports page shows the day's total the API reports, the hourly
// chart and top items; the day-close button asks, is refused while
// tables are open, and closes when forced. Screenshots of each.
func TestGuestCallsAndReports(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()

	// The day so far: 30 orders over six tables (distinct carts, so none
	// is a payload replay), one of them cancelled.
	menu := []string{"tonkotsu", "gyoza", "shio", "chahan", "oolong", "beer"}
	var placed []int64
	tables := make([]session, 6)
	for i := range tables {
		tables[i] = s.openSession(n, fmt.Sprintf("R%d", i+1))
	}
	for round := 0; round < 5; round++ {
		for i, sess := range tables {
			placed = append(placed, s.guestOrder([]int{n, (n + 1) % 3}, sess,
				[]orderLine{{MenuID: menu[(i+round)%len(menu)], Quantity: round + 1, Toppings: []string{}}}, 20*time.Second))
		}
	}
	if r := s.staff(n, "PATCH", fmt.Sprintf("/api/staff/orders/%d", placed[7]), map[string]string{"status": "CANCELLED"}); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	// The day's sales from the menu's prices, not from the report under
	// test: the 30 orders but the cancelled one (round 1, table 2).
	price := menuPrices(t, s, n)
	var day int64
	for round := 0; round < 5; round++ {
		for i := range tables {
			if round*len(tables)+i != 7 {
				day += price[menu[(i+round)%len(menu)]] * int64(round+1)
			}
		}
	}
	perDevice := 2*(price["tonkotsu"]+price["tonkotsu+egg"]) + price["gyoza"]

	for k, d := range devices {
		node := (n + k) % 3
		sess := s.openSession(n, fmt.Sprintf("C%d", k+1))
		s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "tonkotsu", Quantity: 2, Toppings: []string{"egg"}}, {MenuID: "gyoza", Quantity: 1, Toppings: []string{}}}, 30*time.Second)

		st := b.open("staff-calls-"+d.name, s.url(node)+"/staff/", d.w, d.h)
		st.login()
		st.waitVisible(`#sessions-list tr[data-table-id="C` + strconv.Itoa(k+1) + `"]`)
		kt := b.open("kitchen-calls-"+d.name, s.url((node+1)%3)+"/kitchen/", d.w, d.h)
		kt.login()
		kt.waitFor("the kitchen stream live", `document.querySelector('#conn-status').dataset.state === 'live'`, 30*time.Second)

		g := b.open("guest-calls-"+d.name, s.url((node+2)%3)+"/guest/?s="+sess.SessionID, d.w, d.h)
		g.waitVisible("#screen-pin")
		g.typeInto("#pin-input", sess.PIN)
		g.click("#pin-submit")
		g.waitVisible(`#call-bar [data-kind="bill"]`)
		g.screenshot("guest-callbar-" + d.name)
		g.click(`#call-bar [data-kind="bill"]`)
		g.waitFor("the confirmation toast", `!document.querySelector('#toast').hidden && document.querySelector('#toast').textContent.includes('お会計')`, 30*time.Second)
		g.screenshot("guest-call-sent-" + d.name)

		// Live on the console (stream) and the kitchen; the bound is
		// generous for a loaded machine, the figure is logged.
		took := st.waitFor("the bill call on the console", `!!document.querySelector('#calls-panel [data-kind="bill"]')`, 30*time.Second)
		t.Logf("%s: the call reached the console in %v", d.name, took)
		kt.waitFor("the bill call on the kitchen", `!!document.querySelector('#calls-panel [data-kind="bill"]')`, 30*time.Second)
		kt.waitFor("the toasts gone", `document.querySelector('#toast').hidden`, 6*time.Second)
		kt.screenshot("kitchen-calls-" + d.name)
		st.waitFor("the toasts gone", `document.querySelector('#toast').hidden`, 6*time.Second)
		st.screenshot("staff-calls-" + d.name)
		st.click(`#calls-panel [data-kind="bill"] .call-done`)
		st.waitFor("the call gone from the console", `document.querySelector('#calls-panel').hidden`, 30*time.Second)
		kt.waitFor("the call gone from the kitchen", `document.querySelector('#calls-panel').hidden`, 30*time.Second)

		// Reports: the page's total is the API's.
		var rep struct {
			Total int64 `json:"total"`
		}
		s.staff(n, "GET", "/api/staff/reports/sales?by=hour", nil).decode(t, &rep)
		if want := day + int64(k+1)*perDevice; rep.Total != want {
			t.Errorf("%s: the report's total %d, the orders placed come to %d", d.name, rep.Total, want)
		}
		st.click("#tab-reports")
		st.waitVisible("#page-reports")
		st.waitFor("the hourly chart with a bar", `document.querySelectorAll('#reports-hour-chart rect[data-total]:not([data-total="0"])').length >= 1`, 30*time.Second)
		st.waitVisible(`#reports-item-chart rect[data-item="tonkotsu"]`)
		if bars := eval[int64](st, `[...document.querySelectorAll('#reports-hour-chart rect[data-total]')].reduce((a, r) => a + Number(r.dataset.total), 0)`); bars != rep.Total {
			t.Errorf("%s: the hourly bars sum to %d, the day's total is %d", d.name, bars, rep.Total)
		}
		want := "¥" + commas(rep.Total)
		st.waitFor("the total "+want, `document.querySelector('#reports-totals [data-stat="total"] strong').textContent === `+strconv.Quote(want), 30*time.Second)
		st.screenshot("staff-reports-" + d.name)
		// The CSV the page downloads (captured as the page hands it to
		// the browser) sums to the JSON, with a BOM and a header row.
		eval[bool](st, `(() => { window.__csv = null; const orig = URL.createObjectURL;
			URL.createObjectURL = (blob) => { blob.arrayBuffer().then((b) => { const u = new Uint8Array(b);
				window.__csvBOM = u[0] === 0xef && u[1] === 0xbb && u[2] === 0xbf;
				window.__csv = new TextDecoder().decode(u); }); return orig(blob); }; return true; })()`)
		st.click("#reports-csv")
		st.waitFor("the CSV handed to the browser", `window.__csv !== null`, 30*time.Second)
		if !eval[bool](st, `window.__csvBOM`) {
			t.Error("the CSV has no UTF-8 BOM")
		}
		checkCSV(t, eval[string](st, `window.__csv`), s, n)
		st.scrollBelowBars("#reports-tables")
		st.screenshot("staff-reports-tables-" + d.name)

		if k == len(devices)-1 {
			// Day close: asked, refused with open tables, forced.
			st.scrollBelowBars("#reports-close")
			st.click("#reports-close")
			st.waitVisible(`#confirm-dialog[data-kind="day-close"]`)
			st.screenshot("staff-dayclose-confirm-" + d.name)
			st.click("#confirm-ok")
			st.waitVisible(`#confirm-dialog[data-kind="day-close-force"]`)
			if msg := st.text("#confirm-message"); !strings.Contains(msg, "R1") || !strings.Contains(msg, "C2") {
				t.Errorf("the force question %q does not name the open tables", msg)
			}
			st.screenshot("staff-dayclose-force-" + d.name)
			st.click("#confirm-ok")
			st.waitFor("the day closed", `document.querySelector('#reports-result').textContent.includes('第1営業日')`, 30*time.Second)
			st.screenshot("staff-dayclose-done-" + d.name)
		}
	}
}

// checkCSV: the by-item CSV's rows and TOTAL line sum to the JSON report.
func checkCSV(t *testing.T, text string, s *store, n int) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) < 3 || recs[0][0] != "key" || recs[0][4] != "total" {
		t.Fatalf("csv %q: %v", text, err)
	}
	var rep struct {
		Total     int64 `json:"total"`
		Cancelled struct {
			Orders int64 `json:"orders"`
		} `json:"cancelled"`
	}
	s.staff(n, "GET", "/api/staff/reports/sales?by=item", nil).decode(t, &rep)
	var sum int64
	for _, rec := range recs[1:] {
		v, _ := strconv.ParseInt(rec[4], 10, 64)
		switch rec[0] {
		case "TOTAL":
			if v != rep.Total {
				t.Errorf("csv TOTAL %d, JSON total %d", v, rep.Total)
			}
		case "CANCELLED":
			if rec[2] != strconv.FormatInt(rep.Cancelled.Orders, 10) {
				t.Errorf("csv CANCELLED %q, JSON %d", rec[2], rep.Cancelled.Orders)
			}
		default:
			sum += v
		}
	}
	if sum != rep.Total {
		t.Errorf("csv rows sum %d, JSON total %d", sum, rep.Total)
	}
}

// commas writes n as ¥ amounts read on the page (ja-JP grouping).
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// menuPrices is every menu item's price by id, and each of its
// toppings' as "item+topping".
func menuPrices(t *testing.T, s *store, n int) map[string]int64 {
	t.Helper()
	var m struct {
		Items []struct {
			MenuID   string `json:"menuId"`
			Price    int64  `json:"price"`
			Toppings []struct {
				ToppingID string `json:"toppingId"`
				Price     int64  `json:"price"`
			} `json:"toppings"`
		} `json:"items"`
	}
	s.staff(n, "GET", "/api/staff/menu", nil).decode(t, &m)
	out := map[string]int64{}
	for _, it := range m.Items {
		out[it.MenuID] = it.Price
		for _, tp := range it.Toppings {
			out[it.MenuID+"+"+tp.ToppingID] = tp.Price
		}
	}
	return out
}
