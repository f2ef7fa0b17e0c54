package raftfsm

import (
	"bufio"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite driver: CGO_ENABLED=0 cross-builds
)

// Page caches (KiB, SQLite's negative cache_size): Apply's one writer keeps
// the indexes it inserts into; each of the readers only serves guest and
// staff reads of small hot tables, and the OS page cache is behind them, so
// four readers at the writer's size would hold up to 16 MiB of a box's
// memory for little gain.
const (
	writerCacheKiB = 4000
	readerCacheKiB = 1024
)

// walAutocheckpointPages is how many WAL pages Apply's commits add before
// SQLite copies them into the database file. Small, because the WAL is
// reused from its start after each checkpoint: the box keeps rewriting the
// same few hundred KiB of WAL in the page cache (written out once per
// writeback interval) instead of dirtying a fresh 4 MiB stretch of it
// (SQLite's default of 1000 pages) between checkpoints, and a page changed
// by many commits reaches the database file once per checkpoint anyway.
const walAutocheckpointPages = 128

// sqliteDSN: WAL so local reads and snapshots run beside Apply; no fsync
// because the Raft log is the durable part.
func sqliteDSN(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(OFF)")
	// The WAL is truncated back to this after checkpoints instead of
	// staying at its peak size.
	q.Add("_pragma", "journal_size_limit(16777216)")
	if readOnly {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", readerCacheKiB))
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", writerCacheKiB))
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walAutocheckpointPages))
		// A multi-row INSERT (bulk.go) keeps a statement journal of the
		// pages it changes, so it can undo a half-done statement; past 64
		// KiB SQLite spills it to a temporary file unless temporary storage
		// is memory. A group's 32-row chunks of orders passed that: 1.5x
		// the bytes written per order, measured.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	}
	return sqliteURI(path, q)
}

// sqliteURI is the one place a file: URI for SQLite is built: a data_dir
// with '#', '?' or '%' in it must not put the database somewhere else.
func sqliteURI(path string, q url.Values) string {
	u := "file:" + uriPath.Replace(path)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// uriPath escapes what would end the path of a file: URI early.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

func openSQLite(path string) (w, r *sql.DB, err error) {
	w, err = sql.Open("sqlite", sqliteDSN(path, false))
	if err != nil {
		return nil, nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.Ping(); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err = sql.Open("sqlite", sqliteDSN(path, true))
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("open sqlite reader %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	return w, r, nil
}

// Logical dump format: deterministic (tables by name, rows by rowid), so
// the same state dumps to the same bytes on every node; it doubles as the
// SQLite part of a snapshot.
const (
	recTable = 'T'
	recRow   = 'R'
	recIndex = 'I' // a statement run after every row: an index, an AUTOINCREMENT counter
	recEnd   = 'E'

	valNull  = 0
	valInt   = 1
	valFloat = 2
	valText  = 3
	valBlob  = 4
)

type queryer interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

// dumpSQLite writes every table (schema and rows) and index of the database
// as seen by q (a transaction, for a consistent point in time).
func dumpSQLite(q queryer, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	type obj struct{ name, sql string }
	list := func(kind string) ([]obj, error) {
		rows, err := q.Query(`SELECT name, sql FROM sqlite_master WHERE type=? AND name NOT LIKE 'sqlite_%' AND sql IS NOT NULL ORDER BY name`, kind)
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		defer rows.Close()
		var out []obj
		for rows.Next() {
			var o obj
			if err := rows.Scan(&o.name, &o.sql); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, rows.Err()
	}
	tables, err := list("table")
	if err != nil {
		return err
	}
	for _, t := range tables {
		bw.WriteByte(recTable)
		writeStr(bw, t.name)
		writeStr(bw, t.sql)
		if err := dumpRows(q, t.name, bw); err != nil {
			return err
		}
	}
	indexes, err := list("index")
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		bw.WriteByte(recIndex)
		writeStr(bw, ix.sql)
	}
	seqs, err := sequenceStatements(q)
	if err != nil {
		return err
	}
	for _, stmt := range seqs {
		bw.WriteByte(recIndex)
		writeStr(bw, stmt)
	}
	bw.WriteByte(recEnd)
	return bw.Flush()
}

// sequenceStatements sets, after the rows are loaded, each AUTOINCREMENT
// table's counter in sqlite_sequence to what it is here. Without them a
// loaded copy hands out max(rowid)+1 next, which is lower than here once
// the newest rows were deleted (a printed kitchen ticket's job, a synced
// outbox row): a box restored from a snapshot would then give the next
// print job or call another number than the other boxes, and a command
// naming that number (a job printed, a call answered) would act on
// different rows on different boxes. They ride in index records, which
// every loader (older builds too) runs as they are after the rows, so a
// snapshot from this build restores the counters on any build.
func sequenceStatements(q queryer) ([]string, error) {
	rows, err := q.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'`)
	if err != nil {
		return nil, fmt.Errorf("dump sequences: %w", err)
	}
	exists := rows.Next()
	rows.Close()
	if !exists {
		return nil, nil // no AUTOINCREMENT table yet
	}
	rows, err = q.Query(`SELECT name, seq FROM sqlite_sequence ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("dump sequences: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			return nil, fmt.Errorf("dump sequences: %w", err)
		}
		lit := "'" + strings.ReplaceAll(name, "'", "''") + "'"
		// The rows' inserts left max(rowid) there, or no row at all for an
		// empty table: set it either way.
		out = append(out,
			fmt.Sprintf("UPDATE sqlite_sequence SET seq = %d WHERE name = %s", seq, lit),
			fmt.Sprintf("INSERT INTO sqlite_sequence(name, seq) SELECT %s, %d WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)", lit, seq, lit))
	}
	return out, rows.Err()
}

func dumpRows(q queryer, table string, bw *bufio.Writer) error {
	rows, err := q.Query(`SELECT * FROM "` + strings.ReplaceAll(table, `"`, `""`) + `" ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("dump table %s: %w", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("dump table %s: %w", table, err)
		}
		bw.WriteByte(recRow)
		writeU32(bw, uint32(len(vals)))
		for _, v := range vals {
			if err := writeVal(bw, v); err != nil {
				return fmt.Errorf("dump table %s: %w", table, err)
			}
		}
	}
	return rows.Err()
}

func writeStr(w *bufio.Writer, s string) {
	writeU32(w, uint32(len(s)))
	w.WriteString(s)
}

func writeU32(w *bufio.Writer, n uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	w.Write(b[:])
}

func writeVal(w *bufio.Writer, v any) error {
	var b [8]byte
	switch x := v.(type) {
	case nil:
		w.WriteByte(valNull)
	case int64:
		w.WriteByte(valInt)
		binary.BigEndian.PutUint64(b[:], uint64(x))
		w.Write(b[:])
	case float64:
		w.WriteByte(valFloat)
		binary.BigEndian.PutUint64(b[:], math.Float64bits(x))
		w.Write(b[:])
	case string:
		w.WriteByte(valText)
		writeStr(w, x)
	case []byte:
		w.WriteByte(valBlob)
		writeStr(w, string(x))
	case bool:
		w.WriteByte(valInt)
		if x {
			binary.BigEndian.PutUint64(b[:], 1)
		}
		w.Write(b[:])
	default:
		return fmt.Errorf("unsupported sqlite value type %T", v)
	}
	return nil
}

type dumpReader struct {
	r   *bufio.Reader
	err error
}

func (d *dumpReader) byte() byte {
	if d.err != nil {
		return 0
	}
	c, err := d.r.ReadByte()
	d.err = err
	return c
}

func (d *dumpReader) u32() uint32 {
	var b [4]byte
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, b[:])
	}
	return binary.BigEndian.Uint32(b[:])
}

func (d *dumpReader) u64() uint64 {
	var b [8]byte
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, b[:])
	}
	return binary.BigEndian.Uint64(b[:])
}

func (d *dumpReader) bytes() []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if n > 1<<30 {
		d.err = fmt.Errorf("dump value of %d bytes is implausible", n)
		return nil
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	return b
}

func (d *dumpReader) val() any {
	switch d.byte() {
	case valNull:
		return nil
	case valInt:
		return int64(d.u64())
	case valFloat:
		return math.Float64frombits(d.u64())
	case valText:
		return string(d.bytes())
	case valBlob:
		return d.bytes()
	default:
		if d.err == nil {
			d.err = errors.New("unknown value tag in dump")
		}
		return nil
	}
}

// loadSQLite builds a new database file at path from a logical dump.
func loadSQLite(path string, r io.Reader) error {
	_ = os.Remove(path)
	db, err := sql.Open("sqlite", sqliteURI(path, url.Values{"_pragma": {"journal_mode(OFF)", "synchronous(OFF)"}}))
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("begin load: %w", err)
	}
	defer tx.Rollback()
	d := &dumpReader{r: bufio.NewReaderSize(r, 64<<10)}
	var insert *sql.Stmt
	defer func() {
		if insert != nil {
			insert.Close()
		}
	}()
	for {
		rec := d.byte()
		if d.err != nil {
			return fmt.Errorf("read dump: %w", d.err)
		}
		switch rec {
		case recTable:
			name := string(d.bytes())
			create := string(d.bytes())
			if d.err != nil {
				return fmt.Errorf("read dump: %w", d.err)
			}
			if _, err := tx.Exec(create); err != nil {
				return fmt.Errorf("create table %s: %w", name, err)
			}
			if insert != nil {
				insert.Close()
				insert = nil
			}
			var ncols int
			if err := tx.QueryRow(`SELECT count(*) FROM pragma_table_info(?)`, name).Scan(&ncols); err != nil {
				return fmt.Errorf("columns of %s: %w", name, err)
			}
			ph := strings.TrimSuffix(strings.Repeat("?,", ncols), ",")
			insert, err = tx.Prepare(`INSERT INTO "` + strings.ReplaceAll(name, `"`, `""`) + `" VALUES (` + ph + `)`)
			if err != nil {
				return fmt.Errorf("prepare insert into %s: %w", name, err)
			}
		case recRow:
			n := int(d.u32())
			if d.err != nil || n > 4096 {
				return fmt.Errorf("read dump row: %v", d.err)
			}
			vals := make([]any, n)
			for i := range vals {
				vals[i] = d.val()
			}
			if d.err != nil {
				return fmt.Errorf("read dump row: %w", d.err)
			}
			if insert == nil {
				return errors.New("dump row before any table")
			}
			if _, err := insert.Exec(vals...); err != nil {
				return fmt.Errorf("load row: %w", err)
			}
		case recIndex:
			create := string(d.bytes())
			if d.err != nil {
				return fmt.Errorf("read dump: %w", d.err)
			}
			if _, err := tx.Exec(create); err != nil {
				return fmt.Errorf("create index: %w", err)
			}
		case recEnd:
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("commit load: %w", err)
			}
			if _, err := db.Exec(`PRAGMA journal_mode=WAL`); err != nil {
				return fmt.Errorf("set WAL on restored db: %w", err)
			}
			return nil
		default:
			return fmt.Errorf("unknown dump record %q", rec)
		}
	}
}
