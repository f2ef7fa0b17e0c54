package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCheckoutByCardShowsTax: at phone and tablet widths the staff opens
// a table's bill: the total is marked tax-inclusive with the tax inside it
// (the server's taxIncluded for [shop] tax_rate_percent 10), the staff
// picks "card", the confirmation names it, and the result shows the total,
// the tax and the method; the closed session and the payment report
// record card.
func TestCheckoutByCardShowsTax(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	const total, tax = 550 + 600*2, (550 + 600*2) * 10 / 110 // ¥1,750, of which ¥159
	for k, d := range devices {
		table := fmt.Sprintf("K%d", k+1)
		sess := s.openSession(n, table)
		s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "karaage", Quantity: 1, Toppings: []string{}}, {MenuID: "beer", Quantity: 2, Toppings: []string{}}}, 30*time.Second)

		st := b.open("staff-checkout-"+d.name, s.url((n+1+k)%3)+"/staff/", d.w, d.h)
		st.login()
		row := `#sessions-list tr[data-table-id="` + table + `"]`
		st.waitVisible(row)
		st.click(row + ` button[data-action="show"]`)
		st.waitVisible("#checkout-begin")
		st.click("#checkout-begin")
		st.waitVisible("#checkout-panel")
		st.waitFor("the bill total", fmt.Sprintf(`document.querySelector('#checkout-total').dataset.total === '%d'`, total), 30*time.Second)
		st.waitVisible("#checkout-tax-line")
		if got := st.text("#checkout-tax"); got != "¥159" {
			t.Errorf("%s: tax line %q, want ¥159", d.name, got)
		}
		if got := st.text("#checkout-panel .bill-total"); !strings.Contains(got, "税込") {
			t.Errorf("%s: total %q not marked tax-inclusive", d.name, got)
		}
		if !st.eval(`document.querySelector('#checkout-payment input[value="cash"]').checked`) {
			t.Errorf("%s: a new checkout does not start at cash", d.name)
		}
		st.click(`#checkout-payment input[value="card"]`)
		st.scrollBelowBars("#checkout-panel")
		st.screenshot("staff-checkout-card-" + d.name)

		st.click("#checkout-complete")
		st.waitVisible(`#confirm-dialog[data-kind="checkout"]`)
		if msg := st.text("#confirm-message"); !strings.Contains(msg, table) || !strings.Contains(msg, "¥1,750") || !strings.Contains(msg, "カード") {
			t.Errorf("%s: confirmation %q: want the table, the total and カード", d.name, msg)
		}
		st.click("#confirm-ok")
		st.waitVisible("#checkout-result")
		res := eval[map[string]string](st, `Object.assign({text: document.querySelector('#checkout-result').textContent}, document.querySelector('#checkout-result').dataset)`)
		if res["total"] != fmt.Sprint(total) || res["tax"] != fmt.Sprint(tax) || res["payment"] != "card" ||
			!strings.Contains(res["text"], "¥159") || !strings.Contains(res["text"], "カード") {
			t.Errorf("%s: checkout result %v: want total %d, tax %d, card", d.name, res, total, tax)
		}
		st.screenshot("staff-checkout-done-" + d.name)
	}

	// The server recorded the method: the payment mix has both tables.
	var rep struct {
		Rows []struct {
			Key         string `json:"key"`
			Orders      int64  `json:"orders"`
			Total       int64  `json:"total"`
			TaxIncluded int64  `json:"taxIncluded"`
		} `json:"rows"`
	}
	s.staff(n, "GET", "/api/staff/reports/sales?by=payment", nil).decode(t, &rep)
	found := false
	for _, r := range rep.Rows {
		if r.Key == "card" {
			found = true
			if r.Orders != 2 || r.Total != 2*total || r.TaxIncluded != 2*total*10/110 {
				t.Errorf("card in the payment report: %+v, want 2 orders, %d, tax %d", r, 2*total, 2*total*10/110)
			}
		}
	}
	if !found {
		t.Errorf("no card row in the payment report: %+v", rep.Rows)
	}
}
