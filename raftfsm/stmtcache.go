package raftfsm

import (
	"database/sql"
	"fmt"
	"sync"
)

// Querier is what SQL callers use: *sql.DB, *sql.Tx, and the cached forms
// below, which prepare each statement once per connection instead of
// parsing it on every call (parsing was the largest cost of an order).
type Querier interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// stmtCache holds prepared statements of one *sql.DB by their text. The
// set of statements is small and fixed (the domain's queries), so it is
// never evicted.
type stmtCache struct {
	db     *sql.DB
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	wanted map[string]bool // see cachedTx
}

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

func (c *stmtCache) get(query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.m[query]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	// Prepare without the lock: preparing waits for a free connection,
	// and the connections' holders may be waiting for this cache.
	st, err := c.db.Prepare(query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", query, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[query]; ok {
		st.Close()
		return prev, nil
	}
	c.m[query] = st
	return st, nil
}

// peek is the cached statement for query, or nil; it never prepares
// (a nil cache holds nothing).
func (c *stmtCache) peek(query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// want notes a query to prepare once the connection is free.
func (c *stmtCache) want(query string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wanted == nil {
		c.wanted = map[string]bool{}
	}
	c.wanted[query] = true
}

// prepareWanted prepares the queries noted by want. A failure only means
// the query is prepared per transaction again next time.
func (c *stmtCache) prepareWanted() {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	for q := range wanted { // each independently: the order does not matter
		_, _ = c.get(q)
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = map[string]*sql.Stmt{}
}

// cachedDB runs statements through the cache on a pool.
type cachedDB struct{ c *stmtCache }

func (d cachedDB) Exec(query string, args ...any) (sql.Result, error) {
	st, err := d.c.get(query)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

func (d cachedDB) Query(query string, args ...any) (*sql.Rows, error) {
	st, err := d.c.get(query)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

func (d cachedDB) QueryRow(query string, args ...any) *sql.Row {
	st, err := d.c.get(query)
	if err != nil {
		// sql.Row cannot be built with an error from outside; run the
		// unprepared statement so the caller sees the same error.
		return d.c.db.QueryRow(query, args...)
	}
	return st.QueryRow(args...)
}

// cachedTx prepares each statement once per transaction (one Apply
// batch): the writer has a single connection, which the transaction holds,
// so statements cannot be prepared on the pool while it runs. A statement
// the writer's cache (parent) already holds is reused on the transaction
// without parsing it again; one it does not hold is prepared on the
// transaction and noted, and prepared on the pool once the batch is over
// (stmtCache.prepareWanted), so each query is parsed once per connection,
// not once per batch: at a few orders per batch the parsing was a third
// of an order's Apply.
//
// It also holds the rows queued by QueueInsert and the values queued by
// QueueSet (bulk.go) and writes them before any statement that names
// their table.
type cachedTx struct {
	tx     *sql.Tx
	parent *stmtCache // nil: prepare per transaction only
	m      map[string]*sql.Stmt
	bulk   *bulkSet // nil: nothing is queued
	err    error    // a failed flush: the group must not commit
}

func newCachedTx(tx *sql.Tx, parent *stmtCache, bulk *bulkSet) *cachedTx {
	return &cachedTx{tx: tx, parent: parent, m: map[string]*sql.Stmt{}, bulk: bulk}
}

// QueueInsert queues one row of INSERT INTO table(cols) VALUES (args…),
// written at the group's commit or before a statement that names table
// (bulk.go); an immediate Exec when queueing is off. Every row of a
// table and column list has the same number of values.
func (t *cachedTx) QueueInsert(table, cols string, args ...any) error {
	if t.err != nil {
		return t.err
	}
	b := t.bulk
	bt, err := b.table(table, cols, len(args))
	if err != nil {
		return err
	}
	if b.off {
		st, err := t.stmt(bt.text(1))
		if err != nil {
			return err
		}
		_, err = st.Exec(args...)
		return err
	}
	if err := t.flushSame(bt); err != nil {
		return err
	}
	return b.queue(bt, args)
}

// QueueSet queues UPDATE table SET valCol = val WHERE keyCol = key: the
// newest value per key is written at the group's commit or before a
// statement that names table, under QueueInsert's rules (bulk.go); an
// immediate Exec when queueing is off. key is a string or an int64 (an
// int is taken as one), the same type for every key of a set, and names
// its own rows.
func (t *cachedTx) QueueSet(table, keyCol, valCol string, key, val any) error {
	if t.err != nil {
		return t.err
	}
	if k, ok := key.(int); ok {
		key = int64(k)
	}
	b := t.bulk
	bt, err := b.setTable(table, keyCol, valCol, key)
	if err != nil {
		return err
	}
	if b.off {
		st, err := t.stmt(bt.set.text)
		if err != nil {
			return err
		}
		_, err = st.Exec(val, key)
		return err
	}
	if err := t.flushSame(bt); err != nil {
		return err
	}
	return b.queueSet(bt, key, val)
}

// flushSame writes what other entries of bt's table hold (another column
// list, or inserts beside sets), so a table's writes keep their order.
func (t *cachedTx) flushSame(bt *bulkTable) error {
	if t.bulk.pending&bt.same == 0 {
		return nil
	}
	if err := t.bulk.flush(t, bt.same); err != nil {
		t.err = err
		return err
	}
	return nil
}

// flushFor writes the queued rows a statement could see or change.
func (t *cachedTx) flushFor(query string) error {
	if t.err != nil {
		return t.err
	}
	if t.bulk == nil || t.bulk.pending == 0 {
		return nil
	}
	if err := t.bulk.flush(t, t.bulk.namedBy(query)); err != nil {
		t.err = err
		return err
	}
	return nil
}

// flushAll writes every queued row (the group commits, or a handler
// asked for it).
func (t *cachedTx) flushAll() error {
	if t.err != nil {
		return t.err
	}
	if t.bulk == nil {
		return nil
	}
	if err := t.bulk.flush(t, allTables); err != nil {
		t.err = err
		return err
	}
	return nil
}

func (t *cachedTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.m[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if pst := t.parent.peek(query); pst != nil {
		// Runs on the transaction's connection, where pst is prepared.
		st = t.tx.Stmt(pst)
	} else {
		var err error
		if st, err = t.tx.Prepare(query); err != nil {
			return nil, fmt.Errorf("prepare %q: %w", query, err)
		}
		t.parent.want(query)
	}
	t.m[query] = st
	return st, nil
}

func (t *cachedTx) Exec(query string, args ...any) (sql.Result, error) {
	if err := t.flushFor(query); err != nil {
		return nil, err
	}
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

func (t *cachedTx) Query(query string, args ...any) (*sql.Rows, error) {
	if err := t.flushFor(query); err != nil {
		return nil, err
	}
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

func (t *cachedTx) QueryRow(query string, args ...any) *sql.Row {
	// A failed flush is kept in t.err: the batch fails after its
	// handler (applyLocked), whatever this row answers.
	_ = t.flushFor(query)
	st, err := t.stmt(query)
	if err != nil {
		return t.tx.QueryRow(query, args...)
	}
	return st.QueryRow(args...)
}
