package raftfsm

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"
)

// Queued rows: Apply's inserts whose result it does not need (an order's
// audit row, its outbox row, its print jobs) are not written one
// statement at a time. ApplyContext.DB's QueueInsert keeps the row in
// memory, and the rows of a table are written together, as multi-row
// INSERT statements prepared once (chunks of 32, 16, … 1 rows, cached in
// the writer's statement cache), when the group commits or before
// anything could see them:
//
//   - before a statement on the apply transaction (Exec, Query,
//     QueryRow) that names the table: so a read in the same Apply sees
//     its own rows, and an UPDATE or DELETE of the table finds them;
//   - before any statement that is not a plain SELECT, INSERT, UPDATE,
//     DELETE or WITH (schema changes, pragmas): all of them;
//   - at the group's commit (commitFiles), so every commit (the timer,
//     a full group, WaitApplied's early commit, Flush, Capture, pause) holds
//     them, in the same SQLite transaction as today: a crash before the
//     commit loses them with the rest of the group, and the log applies
//     them again.
//
// An abort (abortGroupLocked) drops them with the group.
//
// Queued sets: QueueSet(table, keyCol, valCol, key, val) keeps the newest
// value of one column per key, and writes it as UPDATE table SET valCol
// = ? WHERE keyCol = ? (one prepared statement, one Exec per pending key,
// keys in the order first queued) under exactly the rules above: before a
// statement naming the table, before any statement that is not plain DML,
// at commitFiles and with FlushQueued; dropped on abort. Many Applies
// that set the same key in one group cost one UPDATE (an order's stock
// level, judged from the domain's memory). It is what one UPDATE per
// call leaves: between the call and the flush nothing reads or changes
// the table, so a later value replaces an earlier one, and the UPDATEs
// of different keys commute as long as each key names its own rows (the
// key column's values as stored: keys of one Go type, string or int64,
// on a column of that type's affinity, as a TEXT or INTEGER primary
// key). A table's inserts and sets, or its inserts under another column
// list, are never pending together: queueing one writes the other first,
// so they keep the order they were queued in.
//
// Determinism: the rows of one table are inserted in the order Apply
// queued them, each chunk's rows in order, and nothing reads or changes
// the table in between, so every replica assigns the same rowids and
// AUTOINCREMENT numbers as with one statement per row, whatever its
// grouping; only the interleaving between tables moves, which no table's
// contents depend on. So a queued table must be read and written only
// through statements that name it: no view, trigger or foreign-key action
// may reach it (the domain's schema has none), nothing may read
// last_insert_rowid(), changes() or sqlite_sequence for it, and
// ApplyContext.SQL (the bare transaction) sees a queued row only after
// FlushQueued.
//
// A flush that fails (a full disk) fails the batch like any write: the
// group is dropped and the node pauses or halts (pause.go).

// maxChunk is the largest number of rows one statement inserts; a flush
// uses the largest chunk sizes (powers of two) that fit, so each table
// has at most six statement texts.
const maxChunk = 32

// maxVars keeps every chunk below SQLite's oldest variable limit.
const maxVars = 999

// bulkTable is one queueable INSERT (a table and its column list) and its
// pending rows, or one queued set (set). Only the apply goroutine touches
// it (applyMu).
type bulkTable struct {
	table string
	cols  string
	ncols int
	bit   uint64
	max   int                  // largest chunk for this width
	texts [maxChunkBits]string // by log2 of the chunk size, built lazily
	args  []any                // pending rows, flattened
	rows  int
	// same: the bits of the other entries of the same table; set: a
	// queued set (QueueSet), not an INSERT.
	same uint64
	set  *keyedVals
}

const maxChunkBits = 6 // 1, 2, 4, 8, 16, 32

type bulkKey struct{ table, cols string }

// bulkSet is the FSM's queueable INSERTs, kept across groups (their
// statement texts and which statements name them).
type bulkSet struct {
	byKey   map[bulkKey]*bulkTable
	tables  []*bulkTable // in the order first queued
	pending uint64       // bits of tables with rows queued
	// names: which queued tables a statement text names, judged against
	// the first n tables (recomputed when more are known).
	names map[string]stmtNames
	off   bool // every row written at once (Grouping.Immediate)
	// sets: the queued sets by table and "keyCol valCol"
	sets map[bulkKey]*bulkTable
	// rows queued and statements that wrote them, since Open (QueueStats)
	rows, stmts atomic.Uint64
}

type stmtNames struct {
	mask uint64
	n    int
}

func newBulkSet(off bool) *bulkSet {
	return &bulkSet{byKey: map[bulkKey]*bulkTable{}, sets: map[bulkKey]*bulkTable{}, names: map[string]stmtNames{}, off: off}
}

// allTables is the mask of a statement that must see every queued row.
const allTables = ^uint64(0)

func (b *bulkSet) table(table, cols string, ncols int) (*bulkTable, error) {
	k := bulkKey{table, cols}
	if t, ok := b.byKey[k]; ok {
		if t.ncols != ncols {
			return nil, fmt.Errorf("queue insert into %s(%s): %d values, first queued with %d", table, cols, ncols, t.ncols)
		}
		return t, nil
	}
	if ncols < 1 || ncols > maxVars {
		return nil, fmt.Errorf("queue insert into %s(%s): %d values", table, cols, ncols)
	}
	if !isIdent(table) {
		return nil, fmt.Errorf("queue insert into %q: not a plain table name", table)
	}
	t := &bulkTable{table: table, cols: cols, ncols: ncols, max: maxChunk}
	for t.max*ncols > maxVars {
		t.max /= 2
	}
	b.byKey[k] = t
	b.add(t)
	return t, nil
}

// add gives a new entry its bit and tells the entries of the same table
// of each other.
func (b *bulkSet) add(t *bulkTable) {
	if len(b.tables) < 64 {
		t.bit = 1 << len(b.tables)
	} else {
		t.bit = allTables // beyond 64 tables: any statement flushes them
	}
	for _, u := range b.tables {
		if strings.EqualFold(u.table, t.table) {
			u.same |= t.bit
			t.same |= u.bit
		}
	}
	b.tables = append(b.tables, t)
}

// keyedVals is a queued set's pending values: the newest per key, the
// keys in the order first queued.
type keyedVals struct {
	text   string // UPDATE table SET valCol = ? WHERE keyCol = ?
	strKey bool   // keys are strings (else int64)
	idx    map[any]int
	keys   []any
	vals   []any
}

// setTable is the queued set of valCol by keyCol in table; key is the
// value about to be queued, whose type every key of the set shares.
func (b *bulkSet) setTable(table, keyCol, valCol string, key any) (*bulkTable, error) {
	k := bulkKey{table, keyCol + " " + valCol}
	_, strKey := key.(string)
	if _, isInt := key.(int64); !strKey && !isInt {
		return nil, fmt.Errorf("queue set of %s.%s: key %T, want a string or an int64", table, valCol, key)
	}
	if t, ok := b.sets[k]; ok {
		if t.set.strKey != strKey {
			return nil, fmt.Errorf("queue set of %s.%s: key %T, first queued with another type", table, valCol, key)
		}
		return t, nil
	}
	for _, name := range []string{table, keyCol, valCol} {
		if !isIdent(name) {
			return nil, fmt.Errorf("queue set of %q.%q by %q: not a plain name", table, valCol, keyCol)
		}
	}
	t := &bulkTable{table: table, cols: k.cols, set: &keyedVals{
		text:   "UPDATE " + table + " SET " + valCol + " = ? WHERE " + keyCol + " = ?",
		strKey: strKey, idx: map[any]int{}}}
	b.sets[k] = t
	b.add(t)
	return t, nil
}

// queueSet keeps val as key's newest value.
func (b *bulkSet) queueSet(t *bulkTable, key, val any) error {
	v, err := queueValue(val)
	if err != nil {
		return fmt.Errorf("queue set of %s: %w", t.table, err)
	}
	s := t.set
	if i, ok := s.idx[key]; ok {
		s.vals[i] = v
	} else {
		s.idx[key] = len(s.keys)
		s.keys, s.vals = append(s.keys, key), append(s.vals, v)
		t.rows++
	}
	b.rows.Add(1)
	b.pending |= t.bit
	return nil
}

// reset forgets a set's pending values.
func (s *keyedVals) reset() {
	clear(s.idx)
	clear(s.keys)
	clear(s.vals)
	s.keys, s.vals = s.keys[:0], s.vals[:0]
}

// flushSet writes a set's pending values, keys in the order first queued.
func (b *bulkSet) flushSet(tx *cachedTx, t *bulkTable) error {
	s := t.set
	st, err := tx.stmt(s.text)
	if err != nil {
		return err
	}
	for i, key := range s.keys {
		if _, err := st.Exec(s.vals[i], key); err != nil {
			return fmt.Errorf("set queued %s of %v: %w", t.table, key, err)
		}
		b.stmts.Add(1)
	}
	s.reset()
	t.rows = 0
	return nil
}

// queue keeps one row. Values are converted and copied now (a pointer is
// read at the call, as Exec would), so a caller may reuse what it passed.
func (b *bulkSet) queue(t *bulkTable, args []any) error {
	for _, a := range args {
		v, err := queueValue(a)
		if err != nil {
			return fmt.Errorf("queue insert into %s: %w", t.table, err)
		}
		t.args = append(t.args, v)
	}
	t.rows++
	b.rows.Add(1)
	b.pending |= t.bit
	return nil
}

// queueValue is a value as Exec would pass it, read now: a blob is copied.
func queueValue(a any) (any, error) {
	switch v := a.(type) {
	case nil, int64, string, bool, float64, int:
		return a, nil
	case []byte:
		return bytes.Clone(v), nil
	default:
		return driver.DefaultParameterConverter.ConvertValue(a)
	}
}

// dropAll forgets every pending row and set (the group was aborted).
func (b *bulkSet) dropAll() {
	for _, t := range b.tables {
		if t.set != nil {
			t.set.reset()
		}
		clear(t.args)
		t.args, t.rows = t.args[:0], 0
	}
	b.pending = 0
}

// namedBy is the mask of queued tables the statement text names.
func (b *bulkSet) namedBy(query string) uint64 {
	if s, ok := b.names[query]; ok && s.n == len(b.tables) {
		return s.mask
	}
	var m uint64
	if !plainDML(query) {
		m = allTables
	} else {
		for _, t := range b.tables {
			if names(query, t.table) {
				m |= t.bit
			}
		}
	}
	b.names[query] = stmtNames{mask: m, n: len(b.tables)}
	return m
}

// text is the INSERT of k rows (a power of two).
func (t *bulkTable) text(k int) string {
	i := 0
	for 1<<i < k {
		i++
	}
	if t.texts[i] == "" {
		row := "(?" + strings.Repeat(",?", t.ncols-1) + ")"
		t.texts[i] = "INSERT INTO " + t.table + "(" + t.cols + ") VALUES " + row + strings.Repeat(","+row, k-1)
	}
	return t.texts[i]
}

// flush writes the pending rows of the tables in mask, each table's in
// the order queued.
func (b *bulkSet) flush(tx *cachedTx, mask uint64) error {
	if b.pending&mask == 0 {
		return nil
	}
	for _, t := range b.tables {
		if t.rows == 0 || t.bit&mask == 0 {
			continue
		}
		if t.set != nil {
			if err := b.flushSet(tx, t); err != nil {
				return err
			}
			continue
		}
		done := 0
		for done < t.rows {
			k := t.max
			for k > t.rows-done {
				k /= 2
			}
			st, err := tx.stmt(t.text(k))
			if err != nil {
				return err
			}
			if _, err := st.Exec(t.args[done*t.ncols : (done+k)*t.ncols]...); err != nil {
				return fmt.Errorf("insert %d queued rows into %s: %w", k, t.table, err)
			}
			b.stmts.Add(1)
			done += k
		}
		clear(t.args)
		t.args, t.rows = t.args[:0], 0
	}
	// Tables past the 64th share one bit (allTables): what is still
	// pending is the tables that hold rows.
	b.pending = 0
	for _, t := range b.tables {
		if t.rows > 0 {
			b.pending |= t.bit
		}
	}
	return nil
}

// plainDML reports a statement that reads or writes only the tables it
// names: SELECT, INSERT, UPDATE, DELETE, REPLACE or WITH.
func plainDML(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n(")
	for _, kw := range [...]string{"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH"} {
		if len(q) >= len(kw) && strings.EqualFold(q[:len(kw)], kw) && (len(q) == len(kw) || !identByte(q[len(kw)])) {
			return true
		}
	}
	return false
}

// names reports whether query names table as a whole word (quoted or
// not), ignoring case. A word in a string literal counts too: that only
// flushes early.
func names(query, table string) bool {
	n := len(table)
	for i := 0; i+n <= len(query); i++ {
		if !strings.EqualFold(query[i:i+n], table) {
			continue
		}
		if (i == 0 || !identByte(query[i-1])) && (i+n == len(query) || !identByte(query[i+n])) {
			return true
		}
	}
	return false
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !identByte(s[i]) || s[i] == '$' || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// QueueStats counts the rows Apply queued (QueueInsert, and values
// QueueSet) since Open and the statements that wrote them: rows per
// statement is what the queue saves. Both stay 0 with Grouping.Immediate.
func (f *FSM) QueueStats() (rows, statements uint64) {
	return f.bulk.rows.Load(), f.bulk.stmts.Load()
}
