package store

import (
	"fmt"
	"strings"
)

// queuer is a DB that can keep an insert's row and write it later with
// others (raftfsm's apply transaction, raftfsm/bulk.go): the rows of one
// table are written in the order queued, before any statement that names
// the table and at the group's commit, so what a read sees is as if each
// row had been written at once.
type queuer interface {
	QueueInsert(table, cols string, args ...any) error
}

// setQueuer is a DB that can keep a column's newest value per key and
// write it, one UPDATE per key, under the queued rows' rules (raftfsm's
// QueueSet).
type setQueuer interface {
	QueueSet(table, keyCol, valCol string, key, val any) error
}

// rowInsert is a plain INSERT of one row whose result the caller does not
// need (no id, no count, no conflict clause): one an Apply may queue.
// Only tables that no view, trigger or foreign-key action reaches are
// queued (schema.go has none).
type rowInsert struct {
	table, cols string
	n           int    // values per row
	single      string // the one-row statement, for every other DB
}

func newRowInsert(table, cols string) rowInsert {
	n := strings.Count(cols, ",") + 1
	return rowInsert{table: table, cols: cols, n: n,
		single: "INSERT INTO " + table + "(" + cols + ") VALUES (?" + strings.Repeat(",?", n-1) + ")"}
}

// insert writes (or queues) one row.
func (r rowInsert) insert(tx DB, args ...any) error {
	if len(args) != r.n {
		return fmt.Errorf("insert into %s: %d values for %d columns", r.table, len(args), r.n)
	}
	if q, ok := tx.(queuer); ok {
		return q.QueueInsert(r.table, r.cols, args...)
	}
	_, err := tx.Exec(r.single, args...)
	return err
}

// The inserts an order's Apply makes without needing their result.
var (
	orderInsert    = newRowInsert("orders", orderCols+", ticket_no, fingerprint, attempt, key_until, cart_until")
	auditInsert    = newRowInsert("audit", "at, request_id, client_id, session_id, order_id, reason_code, idempotent_replay, node, detail")
	outboxInsert   = newRowInsert("outbox", "order_id, op")
	printJobInsert = newRowInsert("print_jobs", "printer_id, order_id, doc, created_at")
)
