package raftfsm

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

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

// Past 64 queued tables the later ones share one bit and are written by
// any flush; a flush of some tables leaves the others' rows pending, and
// a later statement naming one of them still finds its rows.
func TestBulkPastSixtyFourTables(t *testing.T) {
	db, err := sql.Open("sqlite", sqliteURI(filepath.Join(t.TempDir(), "t.sqlite"), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for i := range 66 {
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE t%d (a INTEGER)`, i)); err != nil {
			t.Fatal(err)
		}
	}
	stx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer stx.Rollback()
	b := newBulkSet(false)
	tx := newCachedTx(stx, nil, b)
	count := func(table string) int {
		t.Helper()
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 66 {
		if err := tx.QueueInsert(fmt.Sprintf("t%d", i), "a", int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := count("t3"); got != 1 {
		t.Fatalf("t3: %d rows after the read's flush, want 1", got)
	}
	if b.byKey[bulkKey{"t5", "a"}].rows != 1 || b.byKey[bulkKey{"t65", "a"}].rows != 0 {
		t.Fatal("the flush for t3 wrote t5's row or left t65's")
	}
	if got := count("t5"); got != 1 {
		t.Fatalf("t5: %d rows, want its queued row", got)
	}
	if err := tx.flushAll(); err != nil {
		t.Fatal(err)
	}
	if b.pending != 0 || count("t63") != 1 || count("t64") != 1 {
		t.Fatalf("after the last flush: pending %b, t63 %d rows, t64 %d", b.pending, count("t63"), count("t64"))
	}
}
