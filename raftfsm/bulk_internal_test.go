package raftfsm

import "testing"

// A statement flushes the queued tables it names (as a whole word, quoted
// or not, in any case) and, when it is not plain DML, every table.
func TestBulkNamedBy(t *testing.T) {
	b := newBulkSet(false)
	audit, _ := b.table("audit", "a, b", 2)
	outbox, _ := b.table("outbox", "a", 1)
	for _, c := range []struct {
		q    string
		want uint64
	}{
		{`SELECT * FROM audit`, audit.bit},
		{`select count(*) from "AUDIT" where x = 1`, audit.bit},
		{`  (SELECT 1 FROM [outbox])`, outbox.bit},
		{`UPDATE orders SET audit_id = 1`, 0},
		{`SELECT outboxes, x_outbox FROM orders`, 0},
		{`DELETE FROM outbox WHERE seq IN (SELECT seq FROM audit)`, audit.bit | outbox.bit},
		{`WITH t AS (SELECT 1) INSERT INTO outbox(a) SELECT * FROM t`, outbox.bit},
		{`PRAGMA table_info(x)`, allTables},
		{`CREATE TABLE x(y)`, allTables},
		{`SELECTX FROM audit`, allTables},
		{`INSERT INTO printers VALUES (1)`, 0},
	} {
		if got := b.namedBy(c.q); got != c.want {
			t.Errorf("%s: mask %b, want %b", c.q, got, c.want)
		}
	}
	// A table first queued later is judged again for a known text.
	late, _ := b.table("printers", "a", 1)
	if got := b.namedBy(`INSERT INTO printers VALUES (1)`); got != late.bit {
		t.Errorf("after printers is queued: mask %b, want %b", got, late.bit)
	}
}
