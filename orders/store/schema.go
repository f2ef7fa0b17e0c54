// Package store is the domain data in SQLite: the schema and its
// migrations, row types, and the queries both Apply and local reads use.
package store

import (
	"database/sql"
	"fmt"
)

// migrations run in order; each is applied once and recorded in
// schema_version, inside the FSM's migration transaction, so every node
// (and every restored snapshot) ends at the same schema.
var migrations = []string{
	// 1: catalog, stock, tables and sessions, orders, audit, outbox.
	`CREATE TABLE menu_items (
		menu_id    TEXT PRIMARY KEY,
		name       TEXT NOT NULL,
		name_en    TEXT NOT NULL DEFAULT '',
		category   TEXT NOT NULL DEFAULT '',
		price      INTEGER NOT NULL CHECK (price >= 0),
		available  INTEGER NOT NULL DEFAULT 1,
		sort_order INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE toppings (
		topping_id TEXT PRIMARY KEY,
		name       TEXT NOT NULL,
		name_en    TEXT NOT NULL DEFAULT '',
		price      INTEGER NOT NULL CHECK (price >= 0)
	);
	CREATE TABLE menu_toppings (
		menu_id    TEXT NOT NULL,
		topping_id TEXT NOT NULL,
		position   INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (menu_id, topping_id)
	);
	-- a sku without a row is not tracked
	CREATE TABLE stock (
		sku      TEXT PRIMARY KEY,
		quantity INTEGER NOT NULL CHECK (quantity >= 0)
	);
	CREATE TABLE tables (
		table_id   TEXT PRIMARY KEY,
		created_at INTEGER NOT NULL
	);
	CREATE TABLE sessions (
		session_id  TEXT PRIMARY KEY,
		table_id    TEXT NOT NULL,
		pin         TEXT NOT NULL,
		status      TEXT NOT NULL,
		opened_at   INTEGER NOT NULL,
		closed_at   INTEGER
	);
	CREATE INDEX sessions_status ON sessions(status, opened_at);
	CREATE TABLE orders (
		order_id    INTEGER PRIMARY KEY,
		seq         INTEGER NOT NULL,
		session_id  TEXT NOT NULL,
		table_id    TEXT NOT NULL,
		status      TEXT NOT NULL,
		items       TEXT NOT NULL,
		total_price INTEGER NOT NULL,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		request_id  TEXT,
		client_id   TEXT,
		source      TEXT NOT NULL
	);
	CREATE INDEX orders_session ON orders(session_id, seq);
	CREATE INDEX orders_status ON orders(status, seq);
	CREATE INDEX orders_request ON orders(request_id);
	CREATE TABLE audit (
		id                INTEGER PRIMARY KEY,
		at                INTEGER NOT NULL,
		request_id        TEXT,
		client_id         TEXT,
		session_id        TEXT,
		order_id          INTEGER,
		reason_code       TEXT NOT NULL,
		idempotent_replay INTEGER NOT NULL DEFAULT 0,
		node              TEXT NOT NULL DEFAULT '',
		detail            TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE outbox (
		seq      INTEGER PRIMARY KEY,
		order_id INTEGER NOT NULL,
		op       TEXT NOT NULL
	);`,
	// 2: closed sessions' orders move here, so the live tables stay small.
	`CREATE TABLE orders_archive (
		order_id    INTEGER PRIMARY KEY,
		seq         INTEGER NOT NULL,
		session_id  TEXT NOT NULL,
		table_id    TEXT NOT NULL,
		status      TEXT NOT NULL,
		items       TEXT NOT NULL,
		total_price INTEGER NOT NULL,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		request_id  TEXT,
		client_id   TEXT,
		source      TEXT NOT NULL,
		archived_at INTEGER NOT NULL
	);
	CREATE INDEX orders_archive_session ON orders_archive(session_id, seq);`,
	// 3: outbox sequence numbers are never handed out twice (AUTOINCREMENT:
	// an emptied outbox does not restart at 1, so a late outboxSynced for
	// an old seq deletes nothing new); the catalog version lives where only
	// menu writes touch it; a closed session keeps how it was paid.
	`ALTER TABLE outbox RENAME TO outbox_v2;
	CREATE TABLE outbox (
		seq      INTEGER PRIMARY KEY AUTOINCREMENT,
		order_id INTEGER NOT NULL,
		op       TEXT NOT NULL
	);
	INSERT INTO outbox(seq, order_id, op) SELECT seq, order_id, op FROM outbox_v2 ORDER BY seq;
	DROP TABLE outbox_v2;
	CREATE TABLE catalog_version (version INTEGER NOT NULL);
	ALTER TABLE sessions ADD COLUMN payment TEXT NOT NULL DEFAULT '';`,
	// 4: retention is judged on FSM time (a box may boot in 1970): the FSM
	// time at which housekeeping first saw each row (NULL until then).
	`ALTER TABLE audit ADD COLUMN at_fsm INTEGER;
	CREATE INDEX audit_at_fsm ON audit(at_fsm);
	ALTER TABLE sessions ADD COLUMN closed_fsm INTEGER;
	ALTER TABLE orders_archive ADD COLUMN archived_fsm INTEGER;
	CREATE INDEX orders_archive_fsm ON orders_archive(archived_fsm);`,
	// 5: guest calls (staff / bill / water) and business-day closes. A
	// day is the Raft indexes after the previous close up to its own:
	// orders' seq is their Raft index, so a day's orders are a seq range.
	`CREATE TABLE calls (
		call_id    INTEGER PRIMARY KEY AUTOINCREMENT,
		session_id TEXT NOT NULL,
		table_id   TEXT NOT NULL,
		kind       TEXT NOT NULL,
		status     TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		done_at    INTEGER
	);
	CREATE INDEX calls_session ON calls(session_id, status);
	CREATE INDEX calls_status ON calls(status, call_id);
	-- reports read closed days' orders by seq range, archive included
	CREATE INDEX orders_archive_seq ON orders_archive(seq);
	CREATE TABLE day_closes (
		day          INTEGER PRIMARY KEY,
		label        TEXT NOT NULL,
		closed_index INTEGER NOT NULL,
		closed_fsm   INTEGER NOT NULL,
		closed_at    INTEGER NOT NULL,
		forced       INTEGER NOT NULL DEFAULT 0
	);`,
	// 6: kitchen printers and their print outbox. A job is deleted once
	// printed; attempts counts sends begun (a resend prints as a copy).
	`CREATE TABLE printers (
		printer_id TEXT PRIMARY KEY,
		name       TEXT NOT NULL DEFAULT '',
		addr       TEXT NOT NULL,
		stations   TEXT NOT NULL,
		receipts   INTEGER NOT NULL DEFAULT 0,
		online     INTEGER NOT NULL DEFAULT 0,
		last_error TEXT
	);
	CREATE TABLE print_jobs (
		job_id     INTEGER PRIMARY KEY AUTOINCREMENT,
		printer_id TEXT NOT NULL,
		order_id   INTEGER NOT NULL,
		doc        TEXT NOT NULL,
		attempts   INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX print_jobs_printer ON print_jobs(printer_id, job_id);`,
	// 7: order lines: stations, option groups, ticket numbers, bumps.
	migrationLines,
	// 8: menu content, pictures and category names (content.go).
	contentMigration,
	// 9: performance (issue 19): no index
	// on orders.request_id. Its only reader also names the session, which
	// orders_session finds; the index cost every order a write to a
	// random page (a random UUID), on every box's SD card.
	`DROP INDEX IF EXISTS orders_request;`,
	// 10: performance (issue 19): every order's ticket number reads the
	// newest day close (MAX(closed_index)); without an index that is a
	// scan of every close ever made, a year of them costing more than
	// the rest of the order's Apply.
	migrationDayCloseIndex,
	// 11: performance (issue 19): an order's replay windows in its row
	// (replay.go).
	migrationReplayColumns,
}

// SchemaVersion is the version this build migrates to.
var SchemaVersion = len(migrations)

// Migrate brings the schema up to date inside tx.
func Migrate(tx *sql.Tx) error {
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var v int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this build (%d): upgrade the binary", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.Exec(migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.Exec(`DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("record migration %d: %w", i+1, err)
		}
		if _, err := tx.Exec(`INSERT INTO schema_version(version) VALUES (?)`, i+1); err != nil {
			return fmt.Errorf("record migration %d: %w", i+1, err)
		}
	}
	return nil
}
