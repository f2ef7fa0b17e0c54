package store

import (
	"fmt"
	"strings"
	"testing"
)

// queueTx is a DB that queues rows as the FSM's apply transaction does
// and writes each table's rows in one multi-row statement when asked.
type queueTx struct {
	DB
	order []string
	rows  map[string][][]any // by "table(cols)"
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

// Queued rows are seen only through statements that name their table
// (raftfsm/bulk.go): no view, trigger or foreign key may reach a queued
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
		for _, r := range []rowInsert{auditInsert, outboxInsert, printJobInsert} {
			if typ == "foreign key" && (text == r.table || name == r.table) || typ != "foreign key" && strings.Contains(strings.ToLower(text), r.table) {
				t.Errorf("%s %s may reach %s, whose rows an Apply queues", typ, name, r.table)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
