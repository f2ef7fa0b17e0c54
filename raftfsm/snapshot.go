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

// Snapshot captures a point in time: a bbolt read transaction and a SQLite
// read transaction opened between two batches. Persist then streams them
// while Apply goes on (both stores are MVCC).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	// A halted FSM's files lag the index Raft would label the snapshot
	// with: such a snapshot, restored later, would silently skip the
	// entries in between. Refuse; Raft keeps the log instead.
	if err := f.Halted(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	f.mu.RLock()
	btx, err := f.bolt.Begin(false)
	if err != nil {
		f.mu.RUnlock()
		return nil, fmt.Errorf("snapshot: begin bolt read: %w", err)
	}
	stx, err := f.sqlR.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		btx.Rollback()
		f.mu.RUnlock()
		return nil, fmt.Errorf("snapshot: begin sqlite read: %w", err)
	}
	// A deferred SQLite transaction takes its read mark at the first read.
	var n int
	if err := stx.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		stx.Rollback()
		btx.Rollback()
		f.mu.RUnlock()
		return nil, fmt.Errorf("snapshot: start sqlite read: %w", err)
	}
	// The read lock is held until Release so Restore cannot swap the files
	// under a running Persist.
	return &fsmSnapshot{f: f, btx: btx, stx: stx}, nil
}

type fsmSnapshot struct {
	f   *FSM
	btx *bolt.Tx
	stx *sql.Tx
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(snapshotMagic); err != nil {
		return err
	}
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(s.btx.Size()))
	bw.Write(size[:])
	if _, err := s.btx.WriteTo(bw); err != nil {
		return fmt.Errorf("write bolt: %w", err)
	}
	if err := dumpSQLite(s.stx, bw); err != nil {
		return fmt.Errorf("write sqlite: %w", err)
	}
	return bw.Flush()
}

func (s *fsmSnapshot) Release() {
	s.stx.Rollback()
	s.btx.Rollback()
	s.f.mu.RUnlock()
}

// WriteSnapshot streams a consistent snapshot (the same bytes Persist writes)
// to w, for backups.
func (f *FSM) WriteSnapshot(w io.Writer) error {
	snap, err := f.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Release()
	return snap.(*fsmSnapshot).write(w)
}

// Restore replaces both files with the snapshot's content. The new files
// are built aside and renamed into place, so a crash mid-restore leaves
// either the old state or the new one (then Consistent decides).
func (f *FSM) Restore(rc io.ReadCloser) error {
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
	if cerr := bf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore bolt: %w", err)
	}
	if err := loadSQLite(sqlTmp, br); err != nil {
		return fmt.Errorf("restore sqlite: %w", err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
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
	if err := f.openFiles(); err != nil {
		return fmt.Errorf("restore: reopen: %w", err)
	}
	f.state.Lock()
	f.halted = nil
	applied := f.applied
	close(f.advance)
	f.advance = make(chan struct{})
	f.state.Unlock()
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
