package raftfsm

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
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

// checkBoltFile reads the file (no mmap) and checks what bbolt trusts
// blindly at open: a valid meta page describing a file at least this
// long, and every page reachable from the root (branches, leaves, nested
// and inline buckets) with the right id, a known type and elements inside
// the page. bbolt's own checks run in a goroutine of its own and panic
// there, which no recover can catch: a torn file must not get that far.
func checkBoltFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return damaged(boltFile, "read: %v", err)
	}
	if len(data) == 0 {
		return nil // bbolt initializes an empty file
	}
	le := binary.LittleEndian
	type meta struct {
		pageSize   uint32
		root, pgid uint64
		txid       uint64
	}
	readMeta := func(off int) (meta, bool) {
		if off+pageHeader+64 > len(data) {
			return meta{}, false
		}
		m := data[off+pageHeader:]
		if le.Uint32(m[0:]) != 0xED0CDAED || le.Uint32(m[4:]) != 2 {
			return meta{}, false
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != le.Uint64(m[56:]) {
			return meta{}, false
		}
		return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
	}
	m0, ok0 := readMeta(0)
	ps := 4096
	if ok0 && m0.pageSize >= 512 && m0.pageSize <= 1<<16 {
		ps = int(m0.pageSize)
	}
	m1, ok1 := readMeta(ps)
	var m meta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return damaged(boltFile, "no valid meta page (%d bytes)", len(data))
	}
	if m.pageSize < 512 || m.pageSize > 1<<16 || m.root < 2 || m.root >= m.pgid {
		return damaged(boltFile, "meta page describes an impossible file (page size %d, root %d, pages %d)", m.pageSize, m.root, m.pgid)
	}
	ps = int(m.pageSize)
	if m.pgid > uint64(len(data)/ps) {
		return damaged(boltFile, "cut short: the meta page says %d pages of %d bytes, the file has %d bytes", m.pgid, ps, len(data))
	}
	w := boltWalker{data: data, ps: ps, pgid: m.pgid, seen: map[uint64]bool{}}
	return w.page(m.root, 0)
}

const (
	pageHeader      = 16 // id u64, flags u16, count u16, overflow u32
	elemSize        = 16 // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	inBucketSize    = 16 // root pgid u64, sequence u64
	maxBucketDepth  = 64
	maxBTreeHeight  = 64
	maxInlineNested = 64
)

type boltWalker struct {
	data []byte
	ps   int
	pgid uint64
	seen map[uint64]bool
}

func (w *boltWalker) page(id uint64, depth int) error {
	if depth > maxBTreeHeight+maxBucketDepth {
		return damaged(boltFile, "tree deeper than %d", depth)
	}
	if id < 2 || id >= w.pgid {
		return damaged(boltFile, "page %d outside the file's %d pages", id, w.pgid)
	}
	if w.seen[id] {
		return damaged(boltFile, "page %d reachable twice", id)
	}
	w.seen[id] = true
	off := int(id) * w.ps
	le := binary.LittleEndian
	if got := le.Uint64(w.data[off:]); got != id {
		return damaged(boltFile, "page %d says it is page %d", id, got)
	}
	overflow := int(le.Uint32(w.data[off+12:]))
	end := off + (overflow+1)*w.ps
	if overflow < 0 || id+uint64(overflow) >= w.pgid || end > len(w.data) {
		return damaged(boltFile, "page %d overflows past the end of the file", id)
	}
	for i := uint64(1); i <= uint64(overflow); i++ {
		w.seen[id+i] = true
	}
	return w.elements(w.data[off:end], id, depth)
}

// elements checks one page's elements (p starts at its header) and walks
// its children.
func (w *boltWalker) elements(p []byte, id uint64, depth int) error {
	le := binary.LittleEndian
	flags := le.Uint16(p[8:])
	count := int(le.Uint16(p[10:]))
	if pageHeader+count*elemSize > len(p) {
		return damaged(boltFile, "page %d: %d elements do not fit", id, count)
	}
	for i := range count {
		e := pageHeader + i*elemSize
		switch flags {
		case branchPageFlag:
			pos, ksize := int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:]))
			if e+pos+ksize > len(p) {
				return damaged(boltFile, "page %d: key %d outside the page", id, i)
			}
			if err := w.page(le.Uint64(p[e+8:]), depth+1); err != nil {
				return err
			}
		case leafPageFlag:
			eflags, pos := le.Uint32(p[e:]), int(le.Uint32(p[e+4:]))
			ksize, vsize := int(le.Uint32(p[e+8:])), int(le.Uint32(p[e+12:]))
			start := e + pos + ksize
			if pos < 0 || ksize < 0 || vsize < 0 || start+vsize > len(p) {
				return damaged(boltFile, "page %d: element %d outside the page", id, i)
			}
			if eflags&bucketLeafFlag == 0 {
				continue
			}
			v := p[start : start+vsize]
			if len(v) < inBucketSize {
				return damaged(boltFile, "page %d: bucket header of %d bytes", id, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				if err := w.page(root, depth+1); err != nil {
					return err
				}
				continue
			}
			// An inline bucket: its page follows the header in the value.
			inline := v[inBucketSize:]
			if len(inline) < pageHeader || depth > maxInlineNested {
				return damaged(boltFile, "page %d: inline bucket of %d bytes", id, len(inline))
			}
			if err := w.elements(inline, id, depth+1); err != nil {
				return err
			}
		default:
			return damaged(boltFile, "page %d has type %#x", id, flags)
		}
	}
	if count == 0 && flags != leafPageFlag && flags != branchPageFlag {
		return damaged(boltFile, "page %d has type %#x", id, flags)
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
