package orders

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/orders/store"
)

// A business day runs from one day close to the next (Raft indexes, so
// every replica cuts it at the same order). Its date label is the date of
// its close in the store's time zone (timezone.go) on the proposing box's
// clock, less dayCutoff: a close at 01:30 after a late service labels the
// day before. The label travels in the close's command, so Apply knows no
// zone. The day not closed yet is labelled by the same rule from now.
const dayCutoff = 5 * time.Hour

// businessDate is the label of a business day ending at t in zone loc.
func businessDate(t time.Time, loc *time.Location) string {
	return t.In(loc).Add(-dayCutoff).Format("2006-01-02")
}

func validDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil && len(s) == 10
}

// daySpan is one business day as an order seq range lo < seq <= hi (hi 0:
// the open day).
type daySpan struct {
	label  string
	lo, hi uint64
}

// businessDays are every closed day plus the open one.
func businessDays(closes []store.DayClose, now time.Time, loc *time.Location) []daySpan {
	var out []daySpan
	var prev uint64
	for _, d := range closes {
		out = append(out, daySpan{label: d.Label, lo: prev, hi: d.ClosedIndex})
		prev = d.ClosedIndex
	}
	return append(out, daySpan{label: businessDate(now, loc), lo: prev})
}

// ReportRow is one group of a sales report.
type ReportRow struct {
	Key         string `json:"key"`
	Name        string `json:"name,omitempty"` // item reports: the item's name
	Orders      int64  `json:"orders"`
	Items       int64  `json:"items"`
	Total       int64  `json:"total"`
	TaxIncluded int64  `json:"taxIncluded"`
}

// SalesReport is the answer of GET /api/staff/reports/sales.
type SalesReport struct {
	From        string      `json:"from"`
	To          string      `json:"to"`
	By          string      `json:"by"`
	Rows        []ReportRow `json:"rows"`
	Total       int64       `json:"total"`
	TaxIncluded int64       `json:"taxIncluded"`
	Orders      int64       `json:"orders"`
	Items       int64       `json:"items"`
	// Cancelled orders count here only, never in rows or totals.
	Cancelled struct {
		Orders int64 `json:"orders"`
		Total  int64 `json:"total"`
	} `json:"cancelled"`
}

var reportBy = map[string]bool{"day": true, "hour": true, "item": true, "table": true, "payment": true}

// buildReport groups the orders of the spans by `by`; rate is the tax
// rate, loc the store's zone (the hours').
func buildReport(db store.DB, spans []daySpan, by string, rate int64, loc *time.Location) (SalesReport, error) {
	rep := SalesReport{By: by, Rows: []ReportRow{}}
	groups := map[string]*ReportRow{}
	row := func(key, name string) *ReportRow {
		r, found := groups[key]
		if !found {
			r = &ReportRow{Key: key, Name: name}
			groups[key] = r
		}
		return r
	}
	for _, sp := range spans {
		orders, err := store.OrdersInSeqRange(db, sp.lo, sp.hi)
		if err != nil {
			return rep, err
		}
		for _, o := range orders {
			if o.Status == store.StatusCancelled {
				rep.Cancelled.Orders++
				rep.Cancelled.Total += o.TotalPrice
				continue
			}
			var qty int64
			for _, it := range o.Items {
				qty += int64(it.Quantity)
			}
			rep.Orders++
			rep.Items += qty
			rep.Total += o.TotalPrice
			if by == "item" {
				for _, it := range o.Items {
					r := row(it.MenuID, it.Name)
					r.Orders++
					r.Items += int64(it.Quantity)
					r.Total += it.LineTotal
				}
				continue
			}
			var key string
			switch by {
			case "day":
				key = sp.label
			case "hour":
				key = time.UnixMilli(o.CreatedMs).In(loc).Format("15")
			case "table":
				key = o.TableID
			case "payment":
				key = o.Payment
				if key == "" {
					key = "unpaid" // the session is still open, or paid before payments were recorded
				}
			}
			r := row(key, "")
			r.Orders++
			r.Items += qty
			r.Total += o.TotalPrice
		}
	}
	for _, r := range groups {
		r.TaxIncluded = taxIncluded(r.Total, &rate)
		rep.Rows = append(rep.Rows, *r)
	}
	rep.TaxIncluded = taxIncluded(rep.Total, &rate)
	sort.Slice(rep.Rows, func(i, j int) bool {
		a, b := rep.Rows[i], rep.Rows[j]
		if (by == "item" || by == "payment") && a.Total != b.Total {
			return a.Total > b.Total // best sellers first
		}
		return a.Key < b.Key
	})
	return rep, nil
}

func (s *Service) taxRate() int64 { return int64(s.cfg.Shop.TaxRate()) }

// salesReport serves a report from the local replica.
func (s *Service) salesReport(c echo.Context) error {
	loc := s.zone()
	today := businessDate(s.node.ClusterWall(), loc)
	from, to, by := c.QueryParam("from"), c.QueryParam("to"), c.QueryParam("by")
	if from == "" {
		from = today
	}
	if to == "" {
		to = from
	}
	if by == "" {
		by = "day"
	}
	format := c.QueryParam("format")
	if !validDate(from) || !validDate(to) || from > to || !reportBy[by] || (format != "" && format != "json" && format != "csv") {
		return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var rep SalesReport
	err := s.query(func(db store.DB) error {
		closes, err := store.DayCloses(db)
		if err != nil {
			return err
		}
		var spans []daySpan
		for _, sp := range businessDays(closes, s.node.ClusterWall(), loc) {
			if sp.label >= from && sp.label <= to {
				spans = append(spans, sp)
			}
		}
		rep, err = buildReport(db, spans, by, s.taxRate(), loc)
		return err
	})
	if err != nil {
		return s.failErr(c, err)
	}
	rep.From, rep.To = from, to
	if format == "csv" {
		c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sales-%s-%s-%s.csv"`, from, to, by))
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", reportCSV(rep))
	}
	return c.JSON(http.StatusOK, rep)
}

// reportCSV: UTF-8 with a BOM (a spreadsheet then reads Japanese names),
// a header row, one line per row, and a TOTAL line.
func reportCSV(rep SalesReport) []byte {
	var b bytes.Buffer
	b.WriteString("\ufeff")
	w := csv.NewWriter(&b)
	n := strconv.FormatInt
	w.Write([]string{"key", "name", "orders", "items", "total", "taxIncluded"})
	for _, r := range rep.Rows {
		w.Write([]string{r.Key, r.Name, n(r.Orders, 10), n(r.Items, 10), n(r.Total, 10), n(r.TaxIncluded, 10)})
	}
	w.Write([]string{"TOTAL", "", n(rep.Orders, 10), n(rep.Items, 10), n(rep.Total, 10), n(rep.TaxIncluded, 10)})
	w.Write([]string{"CANCELLED", "", n(rep.Cancelled.Orders, 10), "", n(rep.Cancelled.Total, 10), ""})
	w.Flush()
	return b.Bytes()
}

// closeDay records the day boundary, then answers the closed day's report
// by item, read from this replica once it has the close.
func (s *Service) closeDay(c echo.Context) error {
	force := c.QueryParam("force")
	if force != "" && force != "true" && force != "false" {
		return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
	}
	loc := s.zone()
	r, err := s.propose(c.Request().Context(), CmdCloseDay, closeDayCmd{Label: businessDate(s.node.ClusterWall(), loc), Force: force == "true"}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	var closed DayClosed
	if err := json.Unmarshal(r.Body, &closed); err != nil {
		return s.failErr(c, err)
	}
	if err := s.consistent(c.Request().Context()); err != nil {
		return s.failErr(c, err)
	}
	var rep SalesReport
	err = s.query(func(db store.DB) error {
		closes, err := store.DayCloses(db)
		if err != nil {
			return err
		}
		for _, sp := range businessDays(closes, s.node.ClusterWall(), loc) {
			if sp.hi == closed.ClosedIndex {
				rep, err = buildReport(db, []daySpan{sp}, "item", s.taxRate(), loc)
				return err
			}
		}
		return fmt.Errorf("day %d not in the replica", closed.Day)
	})
	if err != nil {
		return s.failErr(c, err)
	}
	rep.From, rep.To = closed.Label, closed.Label
	return c.JSON(http.StatusOK, map[string]any{"day": closed.Day, "label": closed.Label, "closedAt": closed.ClosedAt,
		"closedIndex": closed.ClosedIndex, "forced": closed.Forced, "openSessions": closed.OpenSessions, "report": rep})
}
