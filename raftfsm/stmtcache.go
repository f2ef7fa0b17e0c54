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
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
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
// so statements cannot be prepared on the pool while it runs.
type cachedTx struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func newCachedTx(tx *sql.Tx) *cachedTx { return &cachedTx{tx: tx, m: map[string]*sql.Stmt{}} }

func (t *cachedTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.m[query]; ok {
		return st, nil
	}
	st, err := t.tx.Prepare(query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", query, err)
	}
	t.m[query] = st
	return st, nil
}

func (t *cachedTx) Exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

func (t *cachedTx) Query(query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

func (t *cachedTx) QueryRow(query string, args ...any) *sql.Row {
	st, err := t.stmt(query)
	if err != nil {
		return t.tx.QueryRow(query, args...)
	}
	return st.QueryRow(args...)
}
