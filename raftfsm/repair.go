package raftfsm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"

	"masterorder/raftfsm/boltcheck"
)

// The FSM files are derived state, written without fsync: a power cut can
// leave them missing, torn or behind. Open checks them and sets aside
// (renames, never deletes) what it cannot trust, so the node rebuilds from
// its snapshots and log instead of failing to start.

// asideDir holds the files last set aside (one generation: an SD card has
// no room for many copies of the store).
const asideDir = "set-aside"

// DamageError says why the FSM files cannot be trusted.
type DamageError struct {
	File    string
	Problem string
}

func (e *DamageError) Error() string { return e.File + ": " + e.Problem }

func damaged(file, format string, args ...any) *DamageError {
	return &DamageError{File: file, Problem: fmt.Sprintf(format, args...)}
}

// openChecked opens the files and checks them; damage comes back as a
// *DamageError (never a panic), anything else as an ordinary error.
func (f *FSM) openChecked() error {
	bpath := filepath.Join(f.dir, boltFile)
	spath := filepath.Join(f.dir, sqliteFile)
	_, berr := os.Stat(bpath)
	_, serr := os.Stat(spath)
	switch {
	case errors.Is(berr, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist):
		// A new node, or both lost: empty files at index 0, which the
		// node fills from snapshot and log.
	case errors.Is(berr, os.ErrNotExist):
		return damaged(boltFile, "missing while %s exists", sqliteFile)
	case errors.Is(serr, os.ErrNotExist):
		return damaged(sqliteFile, "missing while %s exists", boltFile)
	default:
		if err := checkBoltFile(bpath); err != nil {
			return err
		}
	}
	return f.openFilesRecovering()
}

// openFilesRecovering checks each file on its own handle first (a torn
// bbolt file panics in its freelist scan; a torn SQLite file fails
// quick_check), then opens them for use.
func (f *FSM) openFilesRecovering() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = damaged(boltFile, "open panicked: %v", r)
		}
	}()
	// A read past the end of a mapping would otherwise kill the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	bpath := filepath.Join(f.dir, boltFile)
	bdb, err := bolt.Open(bpath, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType, Timeout: 10 * time.Second})
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, bolt.ErrTimeout) {
			return fmt.Errorf("open fsm bolt %s: %w", bpath, err)
		}
		return damaged(boltFile, "open: %v", err)
	}
	boltApplied, err := checkBolt(bdb)
	bdb.Close()
	if err != nil {
		return err
	}
	spath := filepath.Join(f.dir, sqliteFile)
	w, r, err := openSQLite(spath)
	if err != nil {
		return damaged(sqliteFile, "%v", err)
	}
	sqlApplied, err := quickCheck(r)
	r.Close()
	w.Close()
	if err != nil {
		return err
	}
	// A crash between the two commits of a batch, or a WAL lost with the
	// batches it held, leaves the files at different indexes.
	if boltApplied != sqlApplied {
		return damaged(boltFile+"+"+sqliteFile, "applied indexes disagree (bbolt %d, SQLite %d)", boltApplied, sqlApplied)
	}
	return f.openFiles()
}

// checkBolt walks every page reachable from the root (bbolt's own
// consistency check) and the meta bucket's applied index.
func checkBolt(db *bolt.DB) (applied uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = damaged(boltFile, "check panicked: %v", r)
		}
	}()
	err = db.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			return damaged(boltFile, "consistency check: %v", cerr)
		}
		if b := tx.Bucket(metaBucket); b != nil {
			if v := b.Get(keyApplied); v != nil && len(v) != 8 {
				return damaged(boltFile, "applied index is %d bytes", len(v))
			}
			applied = getU64(b, keyApplied)
		}
		return nil
	})
	return applied, err
}

// quickCheck runs SQLite's PRAGMA quick_check (every page and index
// structure, without matching index contents to tables) and reads the
// applied index, writing nothing.
func quickCheck(db *sql.DB) (applied uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return 0, damaged(sqliteFile, "quick_check: %v", err)
	}
	defer rows.Close()
	var first string
	n := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return 0, damaged(sqliteFile, "quick_check: %v", err)
		}
		if n == 0 {
			first = line
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, damaged(sqliteFile, "quick_check: %v", err)
	}
	if n != 1 || first != "ok" {
		return 0, damaged(sqliteFile, "quick_check: %s (%d problems)", first, n)
	}
	var exists int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='_fsm_meta'`).Scan(&exists); err != nil {
		return 0, damaged(sqliteFile, "read schema: %v", err)
	}
	if exists == 0 {
		return 0, nil // a new file
	}
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE((SELECT v FROM _fsm_meta WHERE k='applied'),0)`).Scan(&v); err != nil {
		return 0, damaged(sqliteFile, "read applied index: %v", err)
	}
	return uint64(v), nil
}

// checkBoltFile reads the file (no mmap) and checks it before bbolt sees
// it (package boltcheck): bbolt's own checks run in a goroutine of their
// own and panic there, which no recover can catch, so a torn file must
// not get that far.
func checkBoltFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return damaged(boltFile, "read: %v", err)
	}
	if err := boltcheck.Check(data); err != nil {
		return damaged(boltFile, "%v", err)
	}
	return nil
}

// setAside moves the FSM files into fsm/set-aside/ (replacing what an
// earlier repair put there) and returns that path.
func (f *FSM) setAside() (string, error) {
	dst := filepath.Join(f.dir, asideDir)
	if err := os.RemoveAll(dst); err != nil {
		return "", fmt.Errorf("set aside fsm files: %w", err)
	}
	if err := os.Mkdir(dst, 0o750); err != nil {
		return "", fmt.Errorf("set aside fsm files: %w", err)
	}
	for _, name := range []string{boltFile, sqliteFile, sqliteFile + "-wal", sqliteFile + "-shm"} {
		err := os.Rename(filepath.Join(f.dir, name), filepath.Join(dst, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("set aside %s: %w", name, err)
		}
	}
	return dst, nil
}

// Repaired reports what Open found damaged and set aside (nil if the files
// were sound).
func (f *FSM) Repaired() *DamageError { return f.repaired }
