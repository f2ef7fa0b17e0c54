package store

import (
	"database/sql"
	"path/filepath"
	"testing"

	"masterorder/raftfsm"
)

// A data dir written by a build that knew only the first migration opens
// under this build: the schema moves up and the data stays.
func TestMigrationOnExistingDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fsm")
	old := func(tx *sql.Tx) error {
		saved := migrations
		migrations = migrations[:1]
		defer func() { migrations = saved }()
		return Migrate(tx)
	}
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
