package node

import (
	"io"

	"github.com/hashicorp/raft"
)

// fsmSource is where a paused FSM catches up from: the Raft log and the
// newest local snapshot.
type fsmSource struct {
	logs  raft.LogStore
	snaps raft.SnapshotStore
}

func (s fsmSource) GetLog(index uint64, l *raft.Log) error { return s.logs.GetLog(index, l) }

func (s fsmSource) LatestSnapshot() (uint64, io.ReadCloser, error) {
	list, err := s.snaps.List()
	if err != nil || len(list) == 0 {
		return 0, nil, err
	}
	meta, rc, err := s.snaps.Open(list[0].ID)
	if err != nil {
		return 0, nil, err
	}
	return meta.Index, rc, nil
}
