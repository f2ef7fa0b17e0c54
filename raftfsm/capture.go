package raftfsm

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	sqlite "modernc.org/sqlite"
)

// captureDir holds point-in-time copies of the FSM files while they are
// streamed (snapshots, backups). Whatever is left there at open is a
// crashed stream's copy.
const captureDir = "capture"

var captureSeq atomic.Uint64

// Capture is a point-in-time copy of both FSM files on local disk, taken at
// one applied index. Streaming it holds no FSM lock and no transaction on
// the live files, so a reader that stops reading costs nothing but its own
// connection and this copy (removed by Close).
//
// Taking it pins the index in microseconds (both read transactions are
// opened while no batch is applied); the copy itself then runs in the
// background, bounded by the local disk alone, and WriteTo waits for it.
type Capture struct {
	// Index is the Raft index both copies reflect.
	Index uint64

	dir  string
	done chan struct{}
	err  error // set before done is closed
}

// Capture takes a point-in-time copy of both files at the current applied
// index. It may be called from any goroutine, also while entries are being
// applied: the index is pinned between two batches.
func (f *FSM) Capture() (*Capture, error) {
	// A conn of the read pool is taken before applies are held off, so a
	// busy pool never stalls Apply.
	ctx := context.Background()
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return nil, errors.New("capture: fsm closed")
	}
	if f.sqlR == nil {
		f.mu.RUnlock()
		return nil, fmt.Errorf("capture: %w", f.errFilesClosed())
	}
	f.listenMu.RLock()
	gate := f.captureGate
	f.listenMu.RUnlock()
	if gate != nil {
		if err := gate(f.FilesBytes()); err != nil {
			f.mu.RUnlock()
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	conn, err := f.sqlR.Conn(ctx)
	if err != nil {
		f.mu.RUnlock()
		return nil, fmt.Errorf("capture: sqlite conn: %w", err)
	}
	fail := func(err error) (*Capture, error) {
		conn.Close()
		f.mu.RUnlock()
		return nil, fmt.Errorf("capture: %w", err)
	}

	f.applyMu.Lock()
	// The copy is of the files: what is applied must be in them.
	if err := f.commitGroupLocked(); err != nil {
		f.applyMu.Unlock()
		return fail(err)
	}
	index := f.Applied()
	// A halted FSM's files lag the log: a copy would look current and
	// silently miss the entries in between.
	if err := f.Halted(); err != nil {
		f.applyMu.Unlock()
		return fail(err)
	}
	btx, err := f.bolt.Begin(false)
	if err != nil {
		f.applyMu.Unlock()
		return fail(fmt.Errorf("begin bolt read: %w", err))
	}
	// A deferred SQLite transaction takes its read mark at the first read.
	var n int
	if _, err = conn.ExecContext(ctx, `BEGIN`); err == nil {
		err = conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n)
	}
	f.applyMu.Unlock()
	if err != nil {
		btx.Rollback()
		conn.ExecContext(ctx, `ROLLBACK`)
		return fail(fmt.Errorf("begin sqlite read: %w", err))
	}

	dir := filepath.Join(f.dir, captureDir, fmt.Sprintf("%d-%d", index, captureSeq.Add(1)))
	c := &Capture{Index: index, dir: dir, done: make(chan struct{})}
	// The read lock is held only for the copy, which waits on nothing but
	// the disk: a Restore queued behind it is delayed, never deadlocked.
	go func() {
		defer close(c.done)
		defer f.mu.RUnlock()
		defer conn.Close()
		c.err = c.copyFiles(btx, conn)
		if c.err != nil {
			os.RemoveAll(c.dir)
		}
	}()
	return c, nil
}

func (c *Capture) copyFiles(btx *bolt.Tx, conn *sql.Conn) error {
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	// bbolt first and alone: its read transaction blocks the remap a
	// growing file needs, so it is held only for this short copy.
	err := func() error {
		defer btx.Rollback()
		if err := os.MkdirAll(c.dir, 0o750); err != nil {
			return err
		}
		bf, err := os.OpenFile(filepath.Join(c.dir, boltFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = btx.WriteTo(bf)
		if cerr := bf.Close(); err == nil {
			err = cerr
		}
		return err
	}()
	if err != nil {
		return fmt.Errorf("capture bolt: %w", err)
	}
	// SQLite's online backup copies pages inside the open read
	// transaction, so the copy is at the pinned index.
	// No fsync: the copy is thrown away after the stream.
	dst := sqliteURI(filepath.Join(c.dir, sqliteFile), url.Values{"_pragma": {"synchronous(OFF)"}})
	err = conn.Raw(func(dc any) error {
		b, err := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		}).NewBackup(dst)
		if err != nil {
			return err
		}
		_, err = b.Step(-1)
		if ferr := b.Finish(); err == nil {
			err = ferr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("capture sqlite: %w", err)
	}
	return nil
}

// Wait blocks until the copy is on disk (or ctx ends).
func (c *Capture) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WriteTo streams the snapshot format (the bytes Restore reads) from the
// copy.
func (c *Capture) WriteTo(w io.Writer) (int64, error) {
	if err := c.Wait(context.Background()); err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	if err := c.write(bw); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

func (c *Capture) write(bw *bufio.Writer) error {
	bf, err := os.Open(filepath.Join(c.dir, boltFile))
	if err != nil {
		return fmt.Errorf("write bolt: %w", err)
	}
	defer bf.Close()
	st, err := bf.Stat()
	if err != nil {
		return fmt.Errorf("write bolt: %w", err)
	}
	bw.WriteString(snapshotMagic)
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(st.Size()))
	bw.Write(size[:])
	if err := copyN(bw, bf, st.Size()); err != nil {
		return fmt.Errorf("write bolt: %w", err)
	}
	// The copy is private to this capture: a long read of it holds
	// nothing the live files need.
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(c.dir, sqliteFile), true))
	if err != nil {
		return fmt.Errorf("write sqlite: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("write sqlite: %w", err)
	}
	defer tx.Rollback()
	if err := dumpSQLite(tx, bw); err != nil {
		return fmt.Errorf("write sqlite: %w", err)
	}
	return nil
}

// Close removes the copy (after waiting for it to finish).
func (c *Capture) Close() error {
	<-c.done
	return os.RemoveAll(c.dir)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}
