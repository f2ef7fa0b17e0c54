package node

import (
	"path/filepath"

	"github.com/hashicorp/raft"

	"masterorder/node/atomicfile"
)

// The Raft log, its stable store and the snapshots are the durable part of
// a box: an entry acknowledged to a majority must survive a power cut on
// all of them. bbolt fsyncs its commits, but a new file or directory is
// only durable once its directory is fsynced too (atomicfile.SyncDir).

// syncDirs fsyncs each directory in turn.
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// syncedSnapshotStore is raft's file snapshot store with one fsync more:
// the store fsyncs the snapshot's files and, after renaming the snapshot
// directory into place, its parent, but never the snapshot directory
// itself, so after a power cut the directory can be there with its files'
// names lost. Raft compacts its log right after the sink closes: the
// snapshot must be whole on disk by then.
type syncedSnapshotStore struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots/ directory
}

func (s syncedSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &syncedSink{SnapshotSink: sink, dir: filepath.Join(s.dir, sink.ID())}, nil
}

type syncedSink struct {
	raft.SnapshotSink
	dir string
}

func (s *syncedSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.dir)
}
