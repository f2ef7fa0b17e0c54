package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"masterorder/raftfsm"
)

// Backups are FSM snapshots: the same bytes Raft writes to its snapshot
// store (the bbolt file and a consistent copy of the SQLite database), so
// a backup restores exactly like a snapshot a leader sends to a new box.

// WriteBackup streams a consistent snapshot of the whole replicated state
// to w. It first catches up with everything the cluster has committed
// (ReadIndex), so a backup taken on any node holds every acknowledged
// order. It returns the applied index the snapshot holds at least.
func (n *Node) WriteBackup(ctx context.Context, w io.Writer) (uint64, error) {
	if err := n.ConsistentRead(ctx); err != nil {
		return 0, err
	}
	applied := n.fsm.Applied()
	if err := n.fsm.WriteSnapshot(w); err != nil {
		return 0, fmt.Errorf("write backup: %w", err)
	}
	return applied, nil
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
	store, err := raftboltdb.New(raftboltdb.Options{Path: logPath, BoltOptions: &bolt.Options{Timeout: 2 * time.Second}})
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
	if err := fsm.Restore(io.NopCloser(tmp)); err != nil {
		return info, fmt.Errorf("backup does not restore: %w", err)
	}
	info.Index = fsm.Applied()
	if info.Index == 0 {
		return info, errors.New("the backup holds no applied entries (an empty cluster): nothing to restore")
	}
	if ok, err := fsm.Consistent(); err != nil || !ok {
		return info, fmt.Errorf("backup is inconsistent (bbolt and SQLite disagree on the applied index): %v", err)
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
