package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// migratedTx is a transaction on a fresh database at this build's schema,
// rolled back when the test ends.
func migratedTx(t testing.TB) *sql.Tx {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "s.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if err := Migrate(tx); err != nil {
		t.Fatal(err)
	}
	return tx
}

// tableRows is a table's rows with their rowids, as text (what the FSM's
// dump holds of it, and more).
func tableRows(t *testing.T, q DB, table string) string {
	t.Helper()
	rows, err := q.Query(`SELECT rowid, * FROM ` + table + ` ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// oldNextTicketNo is the ticket counter as builds before issue 19 wrote
// it (LastDayClose, then read, DELETE and INSERT of the counter).
func oldNextTicketNo(tx DB) (int64, error) {
	var dayFrom int64
	if err := tx.QueryRow(`SELECT COALESCE(MAX(closed_index), 0) FROM day_closes`).Scan(&dayFrom); err != nil {
		return 0, err
	}
	var from, last int64
	err := tx.QueryRow(`SELECT day_from, last_no FROM ticket_counter`).Scan(&from, &last)
	if err != nil && err != sql.ErrNoRows {
		return 0, err
	}
	next := int64(1)
	if err == nil && from == dayFrom {
		next = last + 1
	}
	if _, err := tx.Exec(`DELETE FROM ticket_counter`); err != nil {
		return 0, err
	}
	_, err = tx.Exec(`INSERT INTO ticket_counter(day_from, last_no) VALUES (?,?)`, dayFrom, next)
	return next, err
}

// The one-statement ticket counter hands out the numbers the old four
// statements did and leaves the same row (rowid included), across day
// closes, closes at a lower index than an earlier one (a restored backup
// in a new cluster) and the very first ticket.
func TestNextTicketNoMatchesOldStatements(t *testing.T) {
	oldTx, newTx := migratedTx(t), migratedTx(t)
	r := rand.New(rand.NewPCG(19, 10))
	index := int64(100)
	for step := range 3000 {
		switch k := r.IntN(20); {
		case k == 0 || k == 1:
			index += int64(r.IntN(50))
			if k == 1 {
				index = int64(r.IntN(100)) // a close below the newest one
			}
			for _, tx := range []*sql.Tx{oldTx, newTx} {
				if _, err := InsertDayClose(tx, "d", uint64(index), 0, 0, false); err != nil {
					t.Fatal(err)
				}
			}
		default:
			want, err := oldNextTicketNo(oldTx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NextTicketNo(newTx)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("step %d: ticket %d, the old statements gave %d", step, got, want)
			}
		}
		if o, n := tableRows(t, oldTx, "ticket_counter"), tableRows(t, newTx, "ticket_counter"); o != n {
			t.Fatalf("step %d: ticket_counter %q, the old statements left %q", step, n, o)
		}
	}
}

// The newest day close is a seek on its index, not a scan of every close.
func TestNewestDayCloseUsesItsIndex(t *testing.T) {
	tx := migratedTx(t)
	plan := queryPlan(t, tx, `SELECT COALESCE(MAX(closed_index), 0) FROM day_closes`)
	if !strings.Contains(plan, "day_closes_closed_index") {
		t.Errorf("plan %q does not use day_closes_closed_index", plan)
	}
}

func queryPlan(t *testing.T, q DB, query string, args ...any) string {
	t.Helper()
	rows, err := q.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	plan := ""
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "; "
	}
	return plan
}

// PrinterStations answers the ids and stations ListPrinters answers, in
// the same order.
func TestPrinterStationsMatchListPrinters(t *testing.T) {
	tx := migratedTx(t)
	for i, st := range [][]string{{"kitchen"}, {}, {"bar", "kitchen"}} {
		if err := UpsertPrinter(tx, Printer{PrinterID: fmt.Sprintf("p%d", 3-i), Addr: "127.0.0.1:9100", Stations: st}); err != nil {
			t.Fatal(err)
		}
		if err := InsertPrintJob(tx, fmt.Sprintf("p%d", 3-i), 1, []byte("{}"), 0); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ListPrinters(tx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PrinterStations(tx)
	if err != nil || len(got) != len(all) {
		t.Fatalf("PrinterStations: %+v %v; ListPrinters: %+v", got, err, all)
	}
	for i := range all {
		if got[i].PrinterID != all[i].PrinterID || fmt.Sprint(got[i].Stations) != fmt.Sprint(all[i].Stations) {
			t.Errorf("printer %d: %+v, ListPrinters %+v", i, got[i], all[i])
		}
	}
}

// BenchmarkPrinterLookup is queueTickets' read of the printers with one of
// two printers offline behind 2,000 queued tickets.
//
//	go test -run '^$' -bench PrinterLookup ./orders/store/
func BenchmarkPrinterLookup(b *testing.B) {
	tx := migratedTx(b)
	for _, id := range []string{"bar", "kitchen"} {
		if err := UpsertPrinter(tx, Printer{PrinterID: id, Addr: "127.0.0.1:9100", Stations: []string{id}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 2000 {
		if err := InsertPrintJob(tx, "kitchen", int64(i), []byte("{}"), 0); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []struct {
		name string
		list func(DB) ([]Printer, error)
	}{{"ListPrinters", ListPrinters}, {"PrinterStations", PrinterStations}} {
		b.Run(f.name, func(b *testing.B) {
			q := preparedTx{tx: tx, m: map[string]*sql.Stmt{}}
			for b.Loop() {
				if ps, err := f.list(q); err != nil || len(ps) != 2 {
					b.Fatal(ps, err)
				}
			}
		})
	}
}

// preparedTx prepares each statement once, as the FSM's statement cache
// does inside Apply, so a benchmark times running statements, not parsing.
type preparedTx struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func (p preparedTx) stmt(q string) *sql.Stmt {
	if s, ok := p.m[q]; ok {
		return s
	}
	s, err := p.tx.Prepare(q)
	if err != nil {
		panic(err) // the domain's fixed queries
	}
	p.m[q] = s
	return s
}

func (p preparedTx) Exec(q string, a ...any) (sql.Result, error) { return p.stmt(q).Exec(a...) }
func (p preparedTx) Query(q string, a ...any) (*sql.Rows, error) { return p.stmt(q).Query(a...) }
func (p preparedTx) QueryRow(q string, a ...any) *sql.Row        { return p.stmt(q).QueryRow(a...) }

// BenchmarkTicketNumber is an order's ticket number after a year of day
// closes: before (the four statements of builds before issue 19, without
// the index), the four with the index, and after.
//
//	go test -run '^$' -bench TicketNumber ./orders/store/
func BenchmarkTicketNumber(b *testing.B) {
	for _, name := range []string{"before", "old-statements-indexed", "after"} {
		b.Run(name, func(b *testing.B) {
			tx := migratedTx(b)
			for d := range 365 {
				if _, err := InsertDayClose(tx, "d", uint64(1000*(d+1)), 0, 0, false); err != nil {
					b.Fatal(err)
				}
			}
			next := NextTicketNo
			if name != "after" {
				next = oldNextTicketNo
			}
			if name == "before" {
				if _, err := tx.Exec(`DROP INDEX day_closes_closed_index`); err != nil {
					b.Fatal(err)
				}
			}
			q := preparedTx{tx: tx, m: map[string]*sql.Stmt{}}
			for b.Loop() {
				if _, err := next(q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// AddOrder writes the row the plain INSERT of builds before issue 19
// wrote; a taken live id fails it, writing nothing (Apply's memory finds
// an id free live and archived first, so that is a batch failing, not an
// answer).
func TestAddOrderWritesThePlainInsertsRow(t *testing.T) {
	oldTx, newTx := migratedTx(t), migratedTx(t)
	req := "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
	o := Order{OrderID: 5, Seq: 40, SessionID: "S1", TableID: "T1", Status: StatusAccepted, TotalPrice: 1020, RequestID: &req,
		Source: "guest", ClientID: "guest-abc", TicketNo: 3,
		Items: []OrderItem{{MenuID: "ramen", Name: "醤油", Quantity: 1, UnitPrice: 1020, LineTotal: 1020, Toppings: []ToppingRef{{ToppingID: "egg", Name: "味玉", Price: 120}}}}}
	items, _ := json.Marshal(o.Items)
	if _, err := oldTx.Exec(`INSERT INTO orders(`+orderCols+`, ticket_no) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		o.OrderID, o.Seq, o.SessionID, o.TableID, o.Status, string(items), o.TotalPrice, int64(77), int64(77), o.RequestID, o.ClientID, o.Source, o.TicketNo); err != nil {
		t.Fatal(err)
	}
	if err := AddOrder(newTx, o, 77, OrderReplay{}); err != nil {
		t.Fatalf("first insert: %v", err)
	}
	want := tableRows(t, oldTx, "orders")
	if got := tableRows(t, newTx, "orders"); got != want {
		t.Fatalf("orders\n%s\nthe plain INSERT wrote\n%s", got, want)
	}
	again := o
	again.Seq, again.SessionID = 41, "S2"
	if err := AddOrder(newTx, again, 78, OrderReplay{}); err == nil {
		t.Fatal("a taken live id was stored")
	}
	if got := tableRows(t, newTx, "orders"); got != want {
		t.Fatalf("a refused insert wrote: orders\n%s", got)
	}
	again.OrderID = 8
	if err := AddOrder(newTx, again, 78, OrderReplay{}); err != nil {
		t.Fatalf("free id: %v", err)
	}
}

// SessionTable answers GetSession's table and status and CatalogVersion's
// version, before and after a menu write; nothing for an unknown session.
func TestSessionTableMatchesGetSessionAndCatalogVersion(t *testing.T) {
	tx := migratedTx(t)
	if err := InsertSession(tx, "S1", "T9", "1234", 5); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 41, 7} {
		if v != 0 {
			if err := SetCatalogVersion(tx, v); err != nil {
				t.Fatal(err)
			}
		}
		if v == 7 {
			if err := CloseSession(tx, "S1", 6, "cash"); err != nil {
				t.Fatal(err)
			}
		}
		table, status, cv, found, err := SessionTable(tx, "S1")
		s, _, _ := GetSession(tx, "S1")
		want, _ := CatalogVersion(tx)
		if err != nil || !found || table != s.TableID || status != s.Status || cv != want {
			t.Errorf("version %d: SessionTable %q %q %d %v %v; GetSession %+v, CatalogVersion %d", v, table, status, cv, found, err, s, want)
		}
	}
	if _, _, _, found, err := SessionTable(tx, "nope"); found || err != nil {
		t.Errorf("unknown session: found %v %v", found, err)
	}
}

// BenchmarkOrderInsert is saving an order under a free id beside 10,000
// live and 10,000 archived orders, one statement per order (AddOrder on
// a DB that does not queue).
//
//	go test -run '^$' -bench OrderInsert ./orders/store/
func BenchmarkOrderInsert(b *testing.B) {
	tx := migratedTx(b)
	for i := range 10000 {
		if _, err := tx.Exec(`INSERT INTO orders_archive(`+orderCols+`, archived_at) VALUES (?, 1, 'S0', 'T0', 'SERVED', '[]', 0, 0, 0, NULL, NULL, 'guest', 0)`, 2*i+1); err != nil {
			b.Fatal(err)
		}
		if err := AddOrder(tx, Order{OrderID: int64(2*i + 2), SessionID: "S0", TableID: "T0", Status: StatusAccepted, Source: "guest"}, 0, OrderReplay{}); err != nil {
			b.Fatal(err)
		}
	}
	q := preparedTx{tx: tx, m: map[string]*sql.Stmt{}}
	o := Order{SessionID: "S1", TableID: "T1", Status: StatusAccepted, Source: "guest", ClientID: "guest-abc", TicketNo: 1,
		Items: []OrderItem{{MenuID: "ramen", Name: "醤油", Quantity: 1, UnitPrice: 900, LineTotal: 900, Toppings: []ToppingRef{}}}}
	id := int64(1 << 30)
	for b.Loop() {
		id++
		o.OrderID, o.Seq = id, id
		if err := AddOrder(q, o, 0, OrderReplay{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionRead is an order's read of its session and the catalog
// version: before (GetSession, then CatalogVersion) and after
// (SessionTable).
//
//	go test -run '^$' -bench SessionRead ./orders/store/
func BenchmarkSessionRead(b *testing.B) {
	tx := migratedTx(b)
	for i := range 6000 {
		if err := InsertSession(tx, fmt.Sprintf("S%05d", i), fmt.Sprintf("T%d", i), "1234", int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := SetCatalogVersion(tx, 12); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"before", "after"} {
		b.Run(name, func(b *testing.B) {
			q := preparedTx{tx: tx, m: map[string]*sql.Stmt{}}
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprintf("S%05d", i%6000)
				if name == "after" {
					if _, _, v, found, err := SessionTable(q, id); err != nil || !found || v != 12 {
						b.Fatal(found, err)
					}
					continue
				}
				if _, found, err := GetSession(q, id); err != nil || !found {
					b.Fatal(found, err)
				}
				if v, err := CatalogVersion(q); err != nil || v != 12 {
					b.Fatal(v, err)
				}
			}
		})
	}
}
