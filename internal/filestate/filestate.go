// Package filestate reads a stopped box's FSM files (its bbolt and SQLite
// files under the data dir's fsm/) as text that compares line by line:
// every bbolt bucket (nested ones too), key and value in key order, then
// every SQLite schema entry and every table's rows in rowid order with
// each value's type (sqlite_sequence included). Tests compare the boxes of
// a store with it: the files on disk, not the FSM's own dump, so the
// comparison holds whatever the FSM keeps in memory or writes late.
//
// It is for tests only (orders/state_files_test.go, update's mixed-version
// test); it opens the files itself, so the box must be stopped.
package filestate

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"
)

// Read is the text of the FSM files of the box whose data dir is dataDir
// (dataDir/fsm/fsm.bolt and dataDir/fsm/domain.sqlite).
func Read(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, "fsm")
	var b strings.Builder
	if err := boltText(filepath.Join(dir, "fsm.bolt"), &b); err != nil {
		return "", err
	}
	if err := sqliteText(filepath.Join(dir, "domain.sqlite"), &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

func boltText(path string, b *strings.Builder) error {
	if _, err := os.Stat(path); err != nil {
		return err // bbolt would make an empty file
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	var walk func(path string, bk *bolt.Bucket) error
	walk = func(path string, bk *bolt.Bucket) error {
		return bk.ForEach(func(k, v []byte) error {
			if v == nil {
				fmt.Fprintf(b, "bolt bucket %s/%q\n", path, k)
				return walk(fmt.Sprintf("%s/%q", path, k), bk.Bucket(k))
			}
			fmt.Fprintf(b, "bolt %s %q=%q\n", path, k, v)
			return nil
		})
	}
	err = bdb.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(b, "bolt bucket %q\n", name)
			return walk(fmt.Sprintf("%q", name), bk)
		})
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func sqliteText(path string, b *strings.Builder) error {
	if _, err := os.Stat(path); err != nil {
		return err // SQLite would make an empty database
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, tbl, text string
		if err := rows.Scan(&typ, &name, &tbl, &text); err != nil {
			rows.Close()
			return fmt.Errorf("read %s: %w", path, err)
		}
		fmt.Fprintf(b, "sqlite schema %s %s on %s: %s\n", typ, name, tbl, text)
		if typ == "table" {
			tables = append(tables, name)
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(tables) == 0 {
		return errors.New(path + " has no table")
	}
	slices.Sort(tables)
	for _, tb := range tables {
		fmt.Fprintf(b, "sqlite table %s \n", tb)
		if err := rowsText(db, tb, b); err != nil {
			return fmt.Errorf("%s table %s: %w", path, tb, err)
		}
	}
	return nil
}

func rowsText(db *sql.DB, table string, b *strings.Builder) error {
	q := `"` + strings.ReplaceAll(table, `"`, `""`) + `"`
	rows, err := db.Query(`SELECT rowid, * FROM ` + q + ` ORDER BY rowid`)
	if err != nil {
		return err
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
			return err
		}
		b.WriteString("  ")
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(b, "blob:%x", v)
			case string:
				fmt.Fprintf(b, "text:%q", v)
			default:
				fmt.Fprintf(b, "%T:%v", v, v)
			}
		}
		b.WriteByte('\n')
	}
	return rows.Err()
}

// Diff is "" for equal texts, else where b first differs from a, named
// by the boxes' names: the line's number, both lines, and the section
// (the bbolt bucket or SQLite table) it is in.
func Diff(a, b, nameA, nameB string) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	section := ""
	for k := 0; k < len(al) && k < len(bl); k++ {
		if al[k] != bl[k] {
			return fmt.Sprintf("%s and %s differ at line %d (in %s):\n  %s: %s\n  %s: %s", nameA, nameB, k+1, section, nameA, al[k], nameB, bl[k])
		}
		if strings.HasPrefix(al[k], "bolt bucket ") || strings.HasPrefix(al[k], "sqlite table ") {
			section = strings.TrimSpace(al[k])
		}
	}
	return fmt.Sprintf("%s has %d lines, %s has %d (after %s)", nameA, len(al), nameB, len(bl), section)
}
