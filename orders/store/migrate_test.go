package store

import (
	"bytes"
	"database/sql"
	"io"
	"path/filepath"
	"testing"

	"masterorder/raftfsm"
)

// migrateTo is Migrate as a build that knew only the first n migrations
// ran it.
func migrateTo(n int) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		saved := migrations
		migrations = migrations[:n]
		defer func() { migrations = saved }()
		return Migrate(tx)
	}
}

// A data dir written by a build that knew only the first migration opens
// under this build: the schema moves up and the data stays.
func TestMigrationOnExistingDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fsm")
	old := migrateTo(1)
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: old})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Query(func(db *sql.DB) error {
		_, err := db.Exec(`SELECT count(*) FROM orders_archive`)
		if err == nil {
			t.Error("old schema already has orders_archive")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Write a row as the old build would have (through a plain connection).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO menu_items(menu_id, name, price) VALUES ('ramen','醤油',900)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	f, err = raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: Migrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Query(func(db *sql.DB) error {
		var v int
		if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
			return err
		}
		if v != SchemaVersion {
			t.Errorf("schema version %d, want %d", v, SchemaVersion)
		}
		if _, err := db.Exec(`SELECT count(*) FROM orders_archive`); err != nil {
			t.Errorf("archive table missing: %v", err)
		}
		items, err := ListMenu(db)
		if err != nil || len(items) != 1 || items[0].Price != 900 {
			t.Errorf("data lost in migration: %+v %v", items, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fsm")
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: Migrate})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "domain.sqlite"))
	db.Exec(`UPDATE schema_version SET version = 99`)
	db.Close()
	if _, err := raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: Migrate}); err == nil {
		t.Fatal("a newer schema was opened")
	}
}

// Schema 3 on a data dir of schema 2: pending outbox rows keep their seqs,
// and from then on a seq is never handed out twice, even once the outbox
// has been emptied.
func TestOutboxMigrationKeepsRowsAndNeverReusesSeqs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fsm")
	old := migrateTo(2)
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: old})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`INSERT INTO outbox(order_id, op) VALUES (7,'upsert'),(8,'upsert'),(9,'delete')`, `DELETE FROM outbox WHERE seq = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	f, err = raftfsm.Open(raftfsm.Options{Dir: dir, Migrate: Migrate})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A write connection, as Apply's would be.
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = func() error {
		rows, err := PendingOutbox(db, 10)
		if err != nil {
			return err
		}
		if len(rows) != 2 || rows[0] != (OutboxRow{Seq: 1, OrderID: 7, Op: OutboxUpsert}) || rows[1].Seq != 2 {
			t.Fatalf("outbox after migration: %+v", rows)
		}
		if err := InsertOutbox(db, 10, OutboxUpsert); err != nil {
			return err
		}
		if err := DeleteOutbox(db, []int64{1, 2, 3}); err != nil {
			return err
		}
		if err := InsertOutbox(db, 11, OutboxUpsert); err != nil {
			return err
		}
		rows, err = PendingOutbox(db, 10)
		if err != nil {
			return err
		}
		if len(rows) != 1 || rows[0].Seq != 4 || rows[0].OrderID != 11 {
			t.Fatalf("seq after emptying the outbox: %+v, want seq 4 (3 was used)", rows)
		}
		return nil
	}()
	if err != nil {
		t.Fatal(err)
	}
}

// A snapshot taken by a schema-2 build, restored by this one, migrates
// too: the outbox keeps its rows and never hands a seq out twice.
func TestRestoredOldSnapshotMigratesTheOutbox(t *testing.T) {
	old := migrateTo(2)
	srcDir := filepath.Join(t.TempDir(), "old")
	src, err := raftfsm.Open(raftfsm.Options{Dir: srcDir, Migrate: old})
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(srcDir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO outbox(order_id, op) VALUES (7,'upsert'),(8,'upsert')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	src, err = raftfsm.Open(raftfsm.Options{Dir: srcDir, Migrate: old})
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := src.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	src.Close()

	dstDir := filepath.Join(t.TempDir(), "new")
	dst, err := raftfsm.Open(raftfsm.Options{Dir: dstDir, Migrate: Migrate})
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(io.NopCloser(&snap)); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dstDir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("restored schema version %d (%v), want %d", v, err, SchemaVersion)
	}
	if err := DeleteOutbox(db, []int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := InsertOutbox(db, 9, OutboxUpsert); err != nil {
		t.Fatal(err)
	}
	rows, err := PendingOutbox(db, 10)
	if err != nil || len(rows) != 1 || rows[0].Seq != 3 {
		t.Fatalf("outbox after restore and emptying: %+v %v, want seq 3", rows, err)
	}
}
