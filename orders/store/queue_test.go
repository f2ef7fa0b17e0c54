package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// queueTx is a DB that queues rows as the FSM's apply transaction does
// and writes each table's rows in one multi-row statement when asked; and
// queued sets, the newest value per key, one UPDATE each.
type queueTx struct {
	DB
	order []string
	rows  map[string][][]any // by "table(cols)"
	sets  []queuedSet
}

type queuedSet struct{ text, key, val any }

func (q *queueTx) QueueSet(table, keyCol, valCol string, key, val any) error {
	text := "UPDATE " + table + " SET " + valCol + " = ? WHERE " + keyCol + " = ?"
	for i, s := range q.sets {
		if s.text == text && s.key == key {
			q.sets[i].val = val
			return nil
		}
	}
	q.sets = append(q.sets, queuedSet{text, key, val})
	return nil
}

func (q *queueTx) QueueInsert(table, cols string, args ...any) error {
	k := table + "(" + cols + ")"
	if q.rows[k] == nil {
		q.order = append(q.order, k)
	}
	q.rows[k] = append(q.rows[k], args)
	return nil
}

func (q *queueTx) flush(t *testing.T) {
	t.Helper()
	for _, k := range q.order {
		rows := q.rows[k]
		ph := "(?" + strings.Repeat(",?", len(rows[0])-1) + ")"
		var args []any
		for _, r := range rows {
			if len(r) != len(rows[0]) {
				t.Fatalf("%s: rows of %d and %d values", k, len(r), len(rows[0]))
			}
			args = append(args, r...)
		}
		if _, err := q.DB.Exec(`INSERT INTO `+k+` VALUES `+ph+strings.Repeat(","+ph, len(rows)-1), args...); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	q.order, q.rows = nil, map[string][][]any{}
	for _, s := range q.sets {
		if _, err := q.DB.Exec(s.text.(string), s.val, s.key); err != nil {
			t.Fatalf("%s: %v", s.text, err)
		}
	}
	q.sets = nil
}

// An order's stock levels, judged from memory and queued per sku
// (QueueStockLevel), newest level only, leave the stock table as the
// per-order take (AddStock of each tracked sku, when none is short) left
// it, whether written at once or queued over many orders; an untracked
// sku stays untracked, and a level below zero is refused.
func TestQueuedStockLevelsWriteWhatPerOrderTakesWrite(t *testing.T) {
	oldTx, nowTx := migratedTx(t), migratedTx(t)
	q := &queueTx{DB: migratedTx(t), rows: map[string][][]any{}}
	r := rand.New(rand.NewPCG(41, 3))
	const nSKUs = 12
	var mem map[string]int64
	for step := range 2000 {
		if step%50 == 0 { // restock, tracking some skus: a statement naming stock writes the queue first
			q.flush(t)
			for i := range nSKUs {
				var level *int64
				if r.IntN(3) != 0 {
					v := int64(r.IntN(8))
					level = &v
				}
				for _, tx := range []DB{oldTx, nowTx, q.DB} {
					if err := SetStock(tx, fmt.Sprintf("sku%02d", i), level); err != nil {
						t.Fatal(err)
					}
				}
			}
			var err error
			if mem, err = StockMap(q.DB); err != nil {
				t.Fatal(err)
			}
		}
		var skus []string
		var units []int64
		for _, i := range r.Perm(nSKUs)[:1+r.IntN(6)] {
			skus = append(skus, fmt.Sprintf("sku%02d", i))
			units = append(units, int64(1+r.IntN(3)))
		}
		short := false
		for i, s := range skus {
			if level, tracked := mem[s]; tracked && level < units[i] {
				short = true
			}
		}
		if short {
			continue
		}
		for i, s := range skus {
			if err := AddStock(oldTx, s, -units[i]); err != nil {
				t.Fatal(err)
			}
			level, tracked := mem[s]
			next := level - units[i]
			if !tracked {
				next = 5 // finds no row: stays untracked
			}
			for _, tx := range []DB{nowTx, q} {
				if err := QueueStockLevel(tx, s, next); err != nil {
					t.Fatal(err)
				}
			}
			if tracked {
				mem[s] = next
			}
		}
		if step%7 == 0 {
			q.flush(t)
		}
		if step%100 == 99 || step == 1999 {
			q.flush(t)
			for _, tx := range []DB{nowTx, q.DB} {
				if got, want := tableRows(t, tx, "stock"), tableRows(t, oldTx, "stock"); got != want {
					t.Fatalf("step %d: stock\n%s\nthe per-order takes left\n%s", step, got, want)
				}
			}
		}
	}
	if err := QueueStockLevel(nowTx, "sku00", -1); err == nil {
		t.Fatal("a level below zero was set")
	}
}

// The inserts an Apply queues (audit, outbox, print jobs) write, queued
// and written together, the rows their one-row statements write, with
// the same rowids.
func TestQueuedInsertsWriteWhatTheirOneRowStatementsWrite(t *testing.T) {
	write := func(db DB) {
		for i := range 40 {
			a := Audit{At: int64(1000 + i), RequestID: fmt.Sprintf("r%d", i), SessionID: "S1", ReasonCode: "ADMITTED", Node: "a", Detail: "d"}
			if i%3 == 0 {
				a.RequestID, a.OrderID, a.IdempotentReplay = "", int64(i), true
			}
			if err := InsertAudit(db, a); err != nil {
				t.Fatal(err)
			}
			if err := InsertOutbox(db, int64(i), OutboxUpsert); err != nil {
				t.Fatal(err)
			}
			if err := InsertPrintJob(db, "k1", int64(i), []byte(fmt.Sprintf(`{"n":%d}`, i)), int64(2000+i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	plain := migratedTx(t)
	write(plain)
	q := &queueTx{DB: migratedTx(t), rows: map[string][][]any{}}
	write(q)
	if len(q.order) != 3 || len(q.rows["audit("+auditInsert.cols+")"]) != 40 {
		t.Fatalf("queued %v; want 40 rows of audit, outbox and print_jobs", q.order)
	}
	q.flush(t)
	for _, table := range []string{"audit", "outbox", "print_jobs"} {
		if got, want := tableRows(t, q.DB, table), tableRows(t, plain, table); got != want {
			t.Errorf("%s queued:\n%s\none row at a time:\n%s", table, got, want)
		}
	}
}

// Queued rows and sets are seen only through statements that name their
// table (raftfsm/bulk.go): no view, trigger or foreign key may reach a queued
// table, or a statement would see or change it without flushing it.
func TestNothingReachesAQueuedTableUnnamed(t *testing.T) {
	tx := migratedTx(t)
	rows, err := tx.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_master WHERE type IN ('view', 'trigger')
		UNION ALL SELECT 'foreign key', m.name, f."table" FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		// stock and ticket_counter: QueueStockLevel's and
		// WriteTicketCounter's queued sets.
		for _, table := range []string{orderInsert.table, auditInsert.table, outboxInsert.table, printJobInsert.table, "stock", "ticket_counter"} {
			if typ == "foreign key" && (text == table || name == table) || typ != "foreign key" && strings.Contains(strings.ToLower(text), table) {
				t.Errorf("%s %s may reach %s, whose rows an Apply queues", typ, name, table)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// The ticket counter kept in memory and written by WriteTicketCounter
// (queued within a day, at once for the first ticket and a new day)
// leaves the row and hands out the numbers NextTicketNo's one statement
// per order does, across day closes and flushes at any point.
func TestQueuedTicketCounterWritesWhatNextTicketNoWrites(t *testing.T) {
	oldTx := migratedTx(t)
	q := &queueTx{DB: migratedTx(t), rows: map[string][][]any{}}
	var mem TicketCounter
	r := rand.New(rand.NewPCG(7, 19))
	for step := range 600 {
		if step > 0 && r.IntN(40) == 0 { // a day close: it names day_closes only
			for _, tx := range []DB{oldTx, q} {
				if _, err := InsertDayClose(tx, "day", uint64(step), int64(step), int64(step), false); err != nil {
					t.Fatal(err)
				}
			}
			mem.DayFrom = int64(step)
		}
		want, err := NextTicketNo(oldTx)
		if err != nil {
			t.Fatal(err)
		}
		got, next := mem.Next()
		if err := WriteTicketCounter(q, mem, next); err != nil {
			t.Fatal(err)
		}
		mem = next
		if got != want {
			t.Fatalf("step %d: ticket %d, NextTicketNo %d", step, got, want)
		}
		if r.IntN(9) == 0 {
			q.flush(t)
			if a, b := tableRows(t, q.DB, "ticket_counter"), tableRows(t, oldTx, "ticket_counter"); a != b {
				t.Fatalf("step %d: ticket_counter\n%s\nNextTicketNo left\n%s", step, a, b)
			}
			if read, err := ReadTicketCounter(q.DB); err != nil || read != mem {
				t.Fatalf("step %d: the files read back %+v (%v), memory %+v", step, read, err, mem)
			}
		}
	}
}
