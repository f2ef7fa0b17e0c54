package orders_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/printing/escpos"
	"masterorder/orders/printing/printertest"
)

type timeZoneView struct {
	TimeZone     *string `json:"timeZone"`
	Source       string  `json:"source"`
	SetAt        *string `json:"setAt"`
	FileTimeZone *string `json:"fileTimeZone"`
}

// settableWall is a wall clock a test moves (forward): the boxes' clocks,
// all alike, at an hour the test picks.
type settableWall struct{ offset atomic.Int64 }

func (w *settableWall) now() time.Time  { return time.Now().Add(time.Duration(w.offset.Load())) }
func (w *settableWall) set(t time.Time) { w.offset.Store(int64(time.Until(t))) }

// printedTime is the date-and-time line of a ticket or receipt.
func printedTime(doc escpos.Printed) string {
	for _, l := range doc.Lines {
		if _, err := time.Parse("2006-01-02 15:04", l); err == nil {
			return l
		}
	}
	return ""
}

// TestStoreTimeZone (issue 37): a store in Asia/Tokyo whose boxes run in
// UTC prints a receipt at 00:30 JST with the JST date and hour; the day
// close's label and the report's hours follow the store's zone, not the
// box's; a zone set from the console reaches every box and wins over
// their files; a bad zone is refused.
func TestStoreTimeZone(t *testing.T) {
	tokyo, err := orders.LoadZone("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	receiptAt := time.Date(2026, 12, 6, 0, 30, 0, 0, tokyo) // 2026-12-05 15:30 UTC
	if receiptAt.In(time.Local).Day() == 6 {
		t.Skipf("the boxes' own zone (%s) is Tokyo's day: this test needs boxes that do not run in the store's zone", time.Local)
	}
	var wall settableWall
	wall.set(receiptAt)
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) { c.Shop.TimeZone = "Asia/Tokyo" },
		func(o *node.Options) { o.WallClock = wall.now })
	s.seedMenu()

	for i := range 3 {
		var v timeZoneView
		s.mustStaff(i, "GET", "/api/staff/time-zone", nil).json(t, &v)
		if v.TimeZone == nil || *v.TimeZone != "Asia/Tokyo" || v.Source != "file" || v.FileTimeZone == nil || *v.FileTimeZone != "Asia/Tokyo" || v.SetAt != nil {
			t.Fatalf("node %d time zone from the file: %+v", i, v)
		}
	}

	// A receipt at 00:30 JST: the JST date, not the UTC one (12-05 15:30).
	till := printertest.Start(t)
	s.mustStaff(0, "PUT", "/api/staff/printers/till", map[string]any{"addr": till.Addr, "stations": []string{}, "receipts": true, "name": "レジ"})
	sess := s.openSession("T1")
	s.staffOrder(t, 0, sess, cart(line("tea", 2)))
	s.mustStaff(1, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", map[string]string{"payment": "cash"})
	var receipt escpos.Printed
	waitFor(t, "the receipt", 30*time.Second, func() bool {
		_, _, all := till.Tickets()
		if len(all) > 0 {
			receipt = all[0]
			return true
		}
		return false
	})
	if at := printedTime(receipt); !strings.HasPrefix(at, "2026-12-06 00:") {
		t.Errorf("receipt printed at %q, want 2026-12-06 00:3x (JST); lines %q", at, receipt.Lines)
	}

	// The morning after, 10:00 JST (01:00 UTC, whose business day is still
	// 12-05): the close is labelled 12-06 and the order sits at hour 00.
	wall.set(time.Date(2026, 12, 6, 10, 0, 0, 0, tokyo))
	var closed struct {
		Label  string     `json:"label"`
		Report reportView `json:"report"`
	}
	s.mustStaff(2, "POST", "/api/staff/days/close", nil).json(t, &closed)
	if closed.Label != "2026-12-06" || closed.Report.Total != 600 {
		t.Fatalf("day close at 10:00 JST: label %q total %d, want 2026-12-06 and 600", closed.Label, closed.Report.Total)
	}
	for i := range 3 {
		var rep reportView
		s.mustStaff(i, "GET", "/api/staff/reports/sales?from=2026-12-06&by=hour", nil).json(t, &rep)
		if len(rep.Rows) != 1 || rep.Rows[0].Key != "00" || rep.Total != 600 {
			t.Errorf("node %d by hour on 2026-12-06: %+v, want the order at hour 00 (JST)", i, rep.Rows)
		}
	}

	// Bad zones are refused by name, before anything is proposed.
	for _, bad := range []string{"Mars/Olympus", "Local", "../../etc/passwd", "", "asia tokyo"} {
		r := s.staff(1, "PUT", "/api/staff/time-zone", map[string]string{"timeZone": bad})
		if r.Status != 400 || r.reason(t) != "INVALID_TIME_ZONE" {
			t.Errorf("PUT time zone %q: %d %s, want 400 INVALID_TIME_ZONE", bad, r.Status, r.Body)
		}
	}

	// A manager moves the store to Los Angeles from one box's console:
	// every box uses it, over its file; 10:00 JST is 17:00 the day before
	// there, so today's business day there is 12-05.
	var set timeZoneView
	s.mustStaff(1, "PUT", "/api/staff/time-zone", map[string]string{"timeZone": "America/Los_Angeles"}).json(t, &set)
	if set.TimeZone == nil || *set.TimeZone != "America/Los_Angeles" || set.Source != "console" || set.SetAt == nil {
		t.Fatalf("PUT time zone answered %+v", set)
	}
	for i := range 3 {
		var v timeZoneView
		var st struct {
			TimeZone string `json:"timeZone"`
		}
		var rep reportView
		waitFor(t, "the zone on every box", 10*time.Second, func() bool {
			s.mustStaff(i, "GET", "/api/staff/time-zone", nil).json(t, &v)
			return v.Source == "console"
		})
		s.mustStaff(i, "GET", "/api/cluster/status", nil).json(t, &st)
		s.mustStaff(i, "GET", "/api/staff/reports/sales", nil).json(t, &rep)
		if v.TimeZone == nil || *v.TimeZone != "America/Los_Angeles" || *v.FileTimeZone != "Asia/Tokyo" || st.TimeZone != "America/Los_Angeles" || rep.From != "2026-12-05" {
			t.Errorf("node %d after the console's change: view %+v, status zone %q, today %q", i, v, st.TimeZone, rep.From)
		}
	}
	s.c.AssertIdentical(time.Minute)
}

// TestTimeZoneConfig: [shop] time_zone is checked by the boxes' rule (the
// wizard's, through cluster.Check); empty is the box's own zone.
func TestTimeZoneConfig(t *testing.T) {
	for _, c := range []struct {
		zone string
		ok   bool
	}{
		{"", true}, {"Asia/Tokyo", true}, {"UTC", true}, {"America/Argentina/Buenos_Aires", true}, {"Etc/GMT-9", true},
		{"Asia/Nowhere", false}, {"Local", false}, {"../zoneinfo/Asia/Tokyo", false}, {"Asia/Tokyo\n", false}, {strings.Repeat("A", 65), false},
	} {
		cfg := orders.Defaults()
		cfg.Demo, cfg.Staff.TokenSecret, cfg.Shop.TimeZone = true, strings.Repeat("s", 32), c.zone
		err := cfg.Validate()
		var ce *node.ConfigError
		if c.ok && err != nil || !c.ok && (err == nil || !errors.As(err, &ce) || ce.Setting != "shop.time_zone") {
			t.Errorf("time_zone %q: %v, want ok=%v", c.zone, err, c.ok)
		}
	}
}

// TestZoneDatabaseInTheBinary: the binary carries the zone database
// (time/tzdata), so a box whose root has no /usr/share/zoneinfo still
// prints Tokyo's time.
func TestZoneDatabaseInTheBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "masterorder").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
		t.Fatal("the masterorder binary does not link time/tzdata")
	}
}
