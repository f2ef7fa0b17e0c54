package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"masterorder/raftfsm"
)

// Backups are FSM snapshots: the same bytes Raft writes to its snapshot
// store (the bbolt file and a consistent copy of the SQLite database), so
// a backup restores exactly like a snapshot a leader sends to a new box.

// WriteBackup streams a consistent snapshot of the whole replicated state
// to w. It first catches up with everything the cluster has committed
// (ReadIndex), so a backup taken on any node holds every acknowledged
// order. It returns the applied index the snapshot holds.
func (n *Node) WriteBackup(ctx context.Context, w io.Writer) (uint64, error) {
	c, err := n.CaptureBackup(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.WriteTo(w); err != nil {
		return 0, fmt.Errorf("write backup: %w", err)
	}
	return c.Index, nil
}

// CaptureBackup catches up with everything committed (ReadIndex) and takes
// a point-in-time copy of the replica at one index, ready to stream; the
// caller closes it.
func (n *Node) CaptureBackup(ctx context.Context) (*raftfsm.Capture, error) {
	// Backups are the first thing a card short of room gives up.
	if s := n.Disk().State; s == DiskLow || s == DiskFull || s == DiskReadOnly {
		return nil, fmt.Errorf("backup: %w", ErrDiskLow)
	}
	if err := n.ConsistentRead(ctx); err != nil {
		return nil, err
	}
	c, err := n.fsm.Capture()
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := c.Wait(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("backup: %w", err)
	}
	return c, nil
}

// streamIdle bounds how long one write of a snapshot or backup stream may
// wait for its reader (a laptop that went to sleep): then the connection is
// dropped and the copy removed.
const streamIdle = 2 * time.Minute

// errStopping ends a stream because the node shuts down.
var errStopping = errors.New("node is stopping")

// StreamCapture writes c to w (and to tee, if not nil). The stream holds
// nothing of the live replica; each write waits at most streamIdle for the
// reader, and the stream is cut at once when the node stops, so a stalled
// reader delays neither applies nor a shutdown.
func (n *Node) StreamCapture(w http.ResponseWriter, c *raftfsm.Capture, tee io.Writer) error {
	sw := &streamWriter{w: w, rc: http.NewResponseController(w)}
	if tee != nil {
		sw.w = io.MultiWriter(w, tee)
	}
	stop := context.AfterFunc(n.ctx, sw.cut)
	defer stop()
	if _, err := c.WriteTo(sw); err != nil {
		return err
	}
	return sw.rc.Flush()
}

type streamWriter struct {
	w  io.Writer
	rc *http.ResponseController

	mu      sync.Mutex
	stopped bool
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return 0, errStopping
	}
	// Not every ResponseWriter supports deadlines (tests' recorders):
	// then only the shutdown cut applies.
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	s.mu.Unlock()
	return s.w.Write(p)
}

// cut unblocks a write in progress and fails the next ones.
func (s *streamWriter) cut() {
	s.mu.Lock()
	s.stopped = true
	_ = s.rc.SetWriteDeadline(time.Unix(1, 0))
	s.mu.Unlock()
}

// RestoreInfo describes a restored data directory.
type RestoreInfo struct {
	// Index is the Raft index the backup reflects; the new cluster's log
	// continues after it.
	Index   uint64
	Bytes   int64
	Members []string
}

// RestoreBackup seeds a fresh node's data directory from a backup, for a
// brand-new single box or a brand-new cluster (restore the same file on
// every box of it, each with its own config). It refuses a data directory
// that already holds Raft state or a replica.
//
// The FSM files are restored in place and the same bytes are installed as
// a Raft snapshot at the backup's applied index N, with the configured
// peers as the voters. Raft then starts from that snapshot: the new log
// begins at N+1, so no entry is skipped by the FSM (which ignores entries
// at or below its applied index), and a box that later joins receives the
// state by snapshot like any other.
func RestoreBackup(cfg Config, opts Options, backup io.Reader) (RestoreInfo, error) {
	var info RestoreInfo
	if err := cfg.Validate(); err != nil {
		return info, err
	}
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(raftDir, 0o750); err != nil {
		return info, fmt.Errorf("create %s: %w", raftDir, err)
	}
	logPath := filepath.Join(raftDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: logPath, BoltOptions: raftLogOptions()})
	if err != nil {
		return info, fmt.Errorf("open raft log %s (is the node running?): %w", logPath, err)
	}
	defer store.Close()
	fileSnaps, err := raft.NewFileSnapshotStore(raftDir, 2, io.Discard)
	if err != nil {
		return info, fmt.Errorf("open snapshot store: %w", err)
	}
	snaps := syncedSnapshotStore{FileSnapshotStore: fileSnaps, dir: filepath.Join(raftDir, "snapshots")}
	if existing, err := raft.HasExistingState(store, store, snaps); err != nil {
		return info, fmt.Errorf("inspect raft state: %w", err)
	} else if existing {
		return info, fmt.Errorf("%s already holds Raft state: restore needs a fresh data_dir", cfg.DataDir)
	}
	fsm, err := raftfsm.Open(raftfsm.Options{Dir: filepath.Join(cfg.DataDir, "fsm"), Migrate: opts.Migrate, Logger: opts.Logger})
	if err != nil {
		return info, err
	}
	defer fsm.Close()
	if fsm.Applied() != 0 {
		return info, fmt.Errorf("%s already holds a replica (applied index %d): restore needs a fresh data_dir", cfg.DataDir, fsm.Applied())
	}

	// The bytes are needed twice (FSM files and Raft snapshot): keep a
	// copy next to the data.
	tmp, err := os.CreateTemp(cfg.DataDir, "restore-*.snap")
	if err != nil {
		return info, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if info.Bytes, err = io.Copy(tmp, backup); err != nil {
		return info, fmt.Errorf("read backup: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return info, err
	}
	if info.Index, err = restoreChecked(fsm, tmp); err != nil {
		return info, err
	}

	var conf raft.Configuration
	self := false
	for _, p := range cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
		self = self || p.ID == cfg.NodeID
		info.Members = append(info.Members, p.ID)
	}
	if !self {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(cfg.NodeID), Address: raft.ServerAddress(cfg.RaftAddr), Suffrage: raft.Voter})
		info.Members = append(info.Members, cfg.NodeID)
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	const term = 1
	sink, err := snaps.Create(1, info.Index, term, conf, info.Index, trans)
	if err != nil {
		return info, fmt.Errorf("create raft snapshot: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		sink.Cancel()
		return info, err
	}
	if _, err := io.Copy(sink, tmp); err != nil {
		sink.Cancel()
		return info, fmt.Errorf("write raft snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return info, fmt.Errorf("write raft snapshot: %w", err)
	}
	// The snapshot is from term 1; the first election is term 2.
	if err := store.SetUint64([]byte("CurrentTerm"), term); err != nil {
		return info, fmt.Errorf("store term: %w", err)
	}
	// The seeded raft/ must survive a power cut before the first start.
	if err := syncDirs(raftDir, cfg.DataDir); err != nil {
		return info, err
	}
	return info, nil
}

// restoreChecked restores a backup into fsm and checks that it holds state
// and that both files agree on its applied index, which it returns.
func restoreChecked(fsm *raftfsm.FSM, backup io.Reader) (uint64, error) {
	if err := fsm.Restore(io.NopCloser(backup)); err != nil {
		return 0, fmt.Errorf("backup does not restore: %w", err)
	}
	index := fsm.Applied()
	if index == 0 {
		return 0, errors.New("the backup holds no applied entries (an empty cluster): nothing to restore")
	}
	if ok, err := fsm.Consistent(); err != nil || !ok {
		return 0, fmt.Errorf("backup is inconsistent (bbolt and SQLite disagree on the applied index): %v", err)
	}
	return index, nil
}

// VerifyBackup restores a backup into a scratch directory made under dir
// (removed afterwards) and checks it like RestoreBackup does; it returns
// the index the backup holds.
func VerifyBackup(opts Options, dir string, backup io.Reader) (uint64, error) {
	scratch, err := os.MkdirTemp(dir, ".verify-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(scratch)
	fsm, err := raftfsm.Open(raftfsm.Options{Dir: scratch, Migrate: opts.Migrate, Logger: opts.Logger})
	if err != nil {
		return 0, err
	}
	defer fsm.Close()
	return restoreChecked(fsm, backup)
}
