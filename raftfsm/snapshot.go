package raftfsm

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// snapshotMagic heads every snapshot; the digit is the snapshot format
// version, so a node can refuse a format it does not know.
const snapshotMagic = "MOSNAP1\n"

// Snapshot pins a point in time and copies both files aside (see
// Capture); Persist streams the copy. Nothing is held across Persist that
// Restore needs: Raft's snapshot thread waits on its main thread between
// the two, and the main thread may be waiting for a Restore.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	// A halted FSM refuses (see Capture): Raft keeps the log instead.
	c, err := f.Capture()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return fsmSnapshot{c}, nil
}

type fsmSnapshot struct{ c *Capture }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.c.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() { s.c.Close() }

// WriteSnapshot streams a consistent snapshot (the same bytes Persist writes)
// to w.
func (f *FSM) WriteSnapshot(w io.Writer) error {
	c, err := f.Capture()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WriteTo(w)
	return err
}

// Restore replaces both files with the snapshot's content. The new files
// are built aside and renamed into place, so a crash mid-restore leaves
// either the old state or the new one (then Consistent decides).
func (f *FSM) Restore(rc io.ReadCloser) error { return f.restore(rc) }

// restore is Restore; a paused FSM resumes only if the snapshot covers
// every entry it owes (else resumeLoop catches up the rest).
func (f *FSM) restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return fmt.Errorf("restore: read header: %w", err)
	}
	if string(magic) != snapshotMagic {
		return fmt.Errorf("restore: unknown snapshot format %q", magic)
	}
	var size [8]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return fmt.Errorf("restore: read bolt size: %w", err)
	}
	boltTmp := filepath.Join(f.dir, boltFile+".restore")
	sqlTmp := filepath.Join(f.dir, sqliteFile+".restore")
	defer os.Remove(boltTmp)
	defer os.Remove(sqlTmp)
	bf, err := os.OpenFile(boltTmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("restore: create %s: %w", boltTmp, err)
	}
	err = copyN(bf, br, int64(binary.BigEndian.Uint64(size[:])))
	if err == nil {
		err = bf.Sync()
	}
	if cerr := bf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore bolt: %w", err)
	}
	if err := loadSQLite(sqlTmp, br); err != nil {
		return fmt.Errorf("restore sqlite: %w", err)
	}
	if err := syncPath(sqlTmp); err != nil {
		return fmt.Errorf("restore sqlite: %w", err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	// What the open group holds is older than the snapshot or comes again
	// after it: the snapshot replaces it.
	f.applyMu.Lock()
	f.abortGroupLocked()
	f.applyMu.Unlock()
	f.closeFiles()
	for _, name := range []string{sqliteFile + "-wal", sqliteFile + "-shm"} {
		if err := os.Remove(filepath.Join(f.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: remove %s: %w", name, err)
		}
	}
	if err := os.Rename(sqlTmp, filepath.Join(f.dir, sqliteFile)); err != nil {
		return fmt.Errorf("restore: install sqlite: %w", err)
	}
	if err := os.Rename(boltTmp, filepath.Join(f.dir, boltFile)); err != nil {
		return fmt.Errorf("restore: install bolt: %w", err)
	}
	// The renames reach the disk only with the directory: a power cut
	// must not leave the old names pointing at half-gone files.
	if err := syncPath(f.dir); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := f.openFiles(); err != nil {
		return fmt.Errorf("restore: reopen: %w", err)
	}
	f.state.Lock()
	applied := f.applied
	f.state.Unlock()
	f.applyMu.Lock()
	f.reopen = false
	resumed := false
	if f.owed <= applied {
		f.owed = 0
		f.state.Lock()
		resumed = f.paused != nil
		f.paused = nil
		f.state.Unlock()
	}
	f.applyMu.Unlock()
	f.state.Lock()
	f.halted = nil
	close(f.advance)
	f.advance = make(chan struct{})
	f.state.Unlock()
	if resumed {
		f.log.Info("state machine resumed: a snapshot covers what it owed", "index", applied)
		f.notifyPause(nil)
	}
	f.listenMu.RLock()
	if f.onRestore != nil {
		f.onRestore(applied)
	}
	f.listenMu.RUnlock()
	return nil
}

// Dump writes a deterministic dump of both stores: every bbolt bucket and
// key in order, then every SQLite table's rows by rowid. Two nodes that
// applied the same log dump to the same bytes.
func (f *FSM) Dump(w io.Writer) error {
	if err := f.Flush(); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	bw := bufio.NewWriter(w)
	err := f.bolt.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			fmt.Fprintf(bw, "bucket %q\n", name)
			return dumpBucket(bw, b, 1)
		})
	})
	if err != nil {
		return fmt.Errorf("dump bolt: %w", err)
	}
	stx, err := f.sqlR.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("dump sqlite: %w", err)
	}
	defer stx.Rollback()
	if err := dumpSQLite(stx, bw); err != nil {
		return fmt.Errorf("dump sqlite: %w", err)
	}
	return bw.Flush()
}

// syncPath fsyncs a file or a directory.
func syncPath(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	err = fh.Sync()
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

func dumpBucket(w *bufio.Writer, b *bolt.Bucket, depth int) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			fmt.Fprintf(w, "%*sbucket %q\n", depth*2, "", k)
			return dumpBucket(w, b.Bucket(k), depth+1)
		}
		fmt.Fprintf(w, "%*s%q=%q\n", depth*2, "", k, v)
		return nil
	})
}
