package orders_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"strconv"
	"testing"
	"time"

	"masterorder/orders"
)

type reportView struct {
	From, To, By string
	Rows         []struct {
		Key         string `json:"key"`
		Name        string `json:"name"`
		Orders      int64  `json:"orders"`
		Items       int64  `json:"items"`
		Total       int64  `json:"total"`
		TaxIncluded int64  `json:"taxIncluded"`
	} `json:"rows"`
	Total       int64 `json:"total"`
	TaxIncluded int64 `json:"taxIncluded"`
	Orders      int64 `json:"orders"`
	Items       int64 `json:"items"`
	Cancelled   struct {
		Orders int64 `json:"orders"`
		Total  int64 `json:"total"`
	} `json:"cancelled"`
}

// today is the business date the store labels now (reports.go: local
// date, a close before 05:00 belongs to the day before).
func today() string { return time.Now().Local().Add(-5 * time.Hour).Format("2006-01-02") }

// TestDayCloseAndSalesReports: day close is refused with open sessions
// unless forced and answers the closed day's report; reports group by
// day, hour, item, table and payment over the live and the archived
// orders, leave cancelled orders out (counted apart), agree on every
// node, and the CSV (BOM, header) sums to the JSON.
func TestDayCloseAndSalesReports(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Admission.SessionBurst.Duration = 0
		c.Admission.Cooldown.Duration = 0
	})
	s.seedMenu()
	order := func(g *guest, body map[string]any) int64 {
		t.Helper()
		body["allowRepeat"] = true
		r := g.order(0, newKey(), body)
		if r.Status != 200 {
			t.Fatalf("order: %d %s", r.Status, r.Body)
		}
		var out success
		r.json(t, &out)
		return out.OrderID
	}
	paid := s.guest(s.openSession("A1"))
	order(paid, cart(line("ramen", 2, "egg"))) // 2040
	order(paid, cart(line("gyoza", 1)))        // 450
	cancelled := order(paid, cart(line("tea", 3)))
	s.mustStaff(1, "PATCH", "/api/staff/orders/"+strconv.FormatInt(cancelled, 10), map[string]string{"status": "CANCELLED"})
	s.mustStaff(1, "POST", "/api/staff/sessions/"+paid.sess.ID+"/checkout", map[string]string{"payment": "card"})
	open := s.guest(s.openSession("B2"))
	order(open, cart(line("tea", 1))) // 300, not checked out

	// Archive the checked-out session's orders: reports read both tables.
	li, leader := s.c.WaitLeader(10 * time.Second)
	if err := s.svcs[li].Housekeep(context.Background()); err != nil {
		t.Fatalf("housekeeping: %v", err)
	}
	var archived int
	if err := leader.FSM().Query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT count(*) FROM orders_archive`).Scan(&archived)
	}); err != nil || archived != 3 {
		t.Fatalf("archived %d orders (%v), want the checked-out session's 3", archived, err)
	}

	if r := s.staff(2, "POST", "/api/staff/days/close", nil); r.Status != 409 || r.reason(t) != "SESSIONS_OPEN" {
		t.Fatalf("close with an open session: %d %s", r.Status, r.Body)
	}
	var closed struct {
		Day    int64      `json:"day"`
		Label  string     `json:"label"`
		Forced bool       `json:"forced"`
		Report reportView `json:"report"`
	}
	s.mustStaff(2, "POST", "/api/staff/days/close?force=true", nil).json(t, &closed)
	if closed.Day != 1 || closed.Label != today() || !closed.Forced || closed.Report.Total != 2790 || closed.Report.Orders != 3 ||
		closed.Report.Cancelled.Orders != 1 || closed.Report.Cancelled.Total != 900 || closed.Report.By != "item" {
		t.Fatalf("day close: %+v", closed)
	}
	// The next day: one more order, then every session checked out, so
	// a plain close goes through.
	order(open, cart(line("gyoza", 2))) // 900, day 2
	s.mustStaff(0, "POST", "/api/staff/sessions/"+open.sess.ID+"/checkout", map[string]string{"payment": "cash"})
	var second struct {
		Day    int64      `json:"day"`
		Report reportView `json:"report"`
	}
	s.mustStaff(1, "POST", "/api/staff/days/close", nil).json(t, &second)
	if second.Day != 2 || second.Report.Total != 900 || second.Report.Orders != 1 || len(second.Report.Rows) != 1 ||
		second.Report.Rows[0].Key != "gyoza" || second.Report.Rows[0].Items != 2 {
		t.Fatalf("second close: %+v", second)
	}

	d := today()
	report := func(node int, by string) reportView {
		t.Helper()
		var rep reportView
		s.mustStaff(node, "GET", "/api/staff/reports/sales?from="+d+"&to="+d+"&by="+by, nil).json(t, &rep)
		if rep.Total != 3690 || rep.Orders != 4 || rep.TaxIncluded != 3690*10/110 || rep.Cancelled.Orders != 1 {
			t.Fatalf("node %d by %s: %+v", node, by, rep)
		}
		var sum int64
		for _, r := range rep.Rows {
			sum += r.Total
			if r.TaxIncluded != r.Total*10/110 {
				t.Fatalf("by %s row %+v: tax", by, r)
			}
		}
		if sum != rep.Total {
			t.Fatalf("by %s rows sum %d, total %d", by, sum, rep.Total)
		}
		return rep
	}
	for i := 0; i < 3; i++ {
		byDay := report(i, "day")
		if len(byDay.Rows) != 1 || byDay.Rows[0].Key != d {
			t.Fatalf("by day: %+v", byDay.Rows)
		}
	}
	byItem := report(0, "item")
	want := map[string][2]int64{"ramen": {2, 2040}, "gyoza": {3, 1350}, "tea": {1, 300}}
	if len(byItem.Rows) != 3 || byItem.Rows[0].Key != "ramen" || byItem.Rows[0].Name != "醤油ラーメン" {
		t.Fatalf("by item: %+v", byItem.Rows)
	}
	for _, r := range byItem.Rows {
		if w := want[r.Key]; r.Items != w[0] || r.Total != w[1] {
			t.Fatalf("item %s: %+v, want %v", r.Key, r, w)
		}
	}
	byTable := report(1, "table")
	if len(byTable.Rows) != 2 || byTable.Rows[0].Key != "A1" || byTable.Rows[0].Total != 2490 || byTable.Rows[1].Total != 1200 {
		t.Fatalf("by table: %+v", byTable.Rows)
	}
	byPay := report(2, "payment")
	if len(byPay.Rows) != 2 || byPay.Rows[0].Key != "card" || byPay.Rows[0].Total != 2490 || byPay.Rows[1].Key != "cash" {
		t.Fatalf("by payment: %+v", byPay.Rows)
	}
	byHour := report(0, "hour")
	for _, r := range byHour.Rows {
		if h, err := strconv.Atoi(r.Key); err != nil || h < 0 || h > 23 || len(r.Key) != 2 {
			t.Fatalf("hour key %q", r.Key)
		}
	}
	// A range without business days answers empty rows.
	var empty reportView
	s.mustStaff(0, "GET", "/api/staff/reports/sales?from=2001-01-01&to=2001-01-31&by=day", nil).json(t, &empty)
	if len(empty.Rows) != 0 || empty.Total != 0 {
		t.Fatalf("empty range: %+v", empty)
	}

	// CSV: BOM, header, the same rows, sums matching the JSON.
	r := s.mustStaff(0, "GET", "/api/staff/reports/sales?from="+d+"&to="+d+"&by=item&format=csv", nil)
	if !bytes.HasPrefix(r.Body, []byte("\xef\xbb\xbf")) || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("csv head: %q %v", r.Body[:min(len(r.Body), 20)], r.Header)
	}
	recs, err := csv.NewReader(bytes.NewReader(r.Body[3:])).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v", err)
	}
	if len(recs) != 1+3+2 || recs[0][0] != "key" || recs[0][4] != "total" {
		t.Fatalf("csv records: %q", recs)
	}
	var csvSum int64
	for _, rec := range recs[1:4] {
		n, _ := strconv.ParseInt(rec[4], 10, 64)
		csvSum += n
	}
	if csvSum != byItem.Total || recs[4][0] != "TOTAL" || recs[4][4] != strconv.FormatInt(byItem.Total, 10) || recs[1][1] != "醤油ラーメン" {
		t.Fatalf("csv sums %d vs %d: %q", csvSum, byItem.Total, recs)
	}

	// Malformed ranges and groupings.
	for _, q := range []string{"from=2026-13-01", "from=2026-01-02&to=2026-01-01", "by=week", "from=20260101", "format=xml",
		"from=2026-1-1"} {
		if r := s.staff(0, "GET", "/api/staff/reports/sales?"+q, nil); r.Status != 400 || r.reason(t) != "INVALID_REQUEST" {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
	}
	if r := s.staff(0, "POST", "/api/staff/days/close?force=yes", nil); r.Status != 400 {
		t.Fatalf("force=yes: %d %s", r.Status, r.Body)
	}
}
