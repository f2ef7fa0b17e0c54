package filestate_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"

	"masterorder/internal/filestate"
)

// box writes a data dir's fsm/ files: a bbolt file with a nested bucket
// and a SQLite file with an AUTOINCREMENT table, its rows of mixed types.
func box(t *testing.T, value string, rows ...string) string {
	t.Helper()
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "fsm")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(dir, "fsm.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		kv, err := tx.CreateBucket([]byte("kv"))
		if err != nil {
			return err
		}
		if err := kv.Put([]byte("idem:a"), []byte(value)); err != nil {
			return err
		}
		inner, err := kv.CreateBucket([]byte("inner"))
		if err != nil {
			return err
		}
		return inner.Put([]byte("k"), []byte("v"))
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT, n INTEGER, raw BLOB)`); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO audit (what, n, raw) VALUES (?, ?, ?)`, r, i, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return dataDir
}

func read(t *testing.T, dataDir string) string {
	t.Helper()
	text, err := filestate.Read(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func TestReadHasEveryBucketKeyTableAndRow(t *testing.T) {
	text := read(t, box(t, "1", "placed", "admitted"))
	for _, want := range []string{
		`bolt bucket "kv"`,
		`bolt "kv" "idem:a"="1"`,
		`bolt bucket "kv"/"inner"`,
		`bolt "kv"/"inner" "k"="v"`,
		"sqlite schema table audit on audit: CREATE TABLE audit",
		"sqlite table audit \n  int64:1 | int64:1 | text:\"placed\" | int64:0 | blob:00\n  int64:2 | int64:2 | text:\"admitted\" | int64:1 | blob:01\n",
		"sqlite table sqlite_sequence \n  int64:1 | text:\"audit\" | int64:2\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}

func TestDiffNamesWhereTheBoxesDiffer(t *testing.T) {
	a := read(t, box(t, "1", "placed", "admitted"))
	if d := filestate.Diff(a, read(t, box(t, "1", "placed", "admitted")), "a", "b"); d != "" {
		t.Fatalf("the same files differ: %s", d)
	}
	d := filestate.Diff(a, read(t, box(t, "2", "placed", "admitted")), "a", "b")
	if !strings.Contains(d, `(in bolt bucket "kv")`) || !strings.Contains(d, `b: bolt "kv" "idem:a"="2"`) {
		t.Errorf("a changed value: %s", d)
	}
	d = filestate.Diff(a, read(t, box(t, "1", "admitted", "placed")), "a", "b")
	if !strings.Contains(d, "(in sqlite table audit)") {
		t.Errorf("rows in another order: %s", d)
	}
	d = filestate.Diff(a, read(t, box(t, "1", "placed")), "a", "b")
	if !strings.Contains(d, "sqlite table audit") {
		t.Errorf("a row missing: %s", d)
	}
}

func TestReadRefusesMissingFiles(t *testing.T) {
	if _, err := filestate.Read(t.TempDir()); err == nil {
		t.Fatal("a data dir without fsm files read as text")
	}
}
