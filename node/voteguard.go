package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// How long a failed Raft log write keeps the box from voting (refreshed
// by every failed retry; a write that works ends it).
const appendFailHold = 10 * time.Second

// voteRefusal says why this box must not vote now: its Raft log could not
// take the last entries (a voter must hold what it acknowledges).
func (n *Node) voteRefusal() error {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.appendErr != nil && time.Since(d.appendErrAt) < appendFailHold {
		return fmt.Errorf("not voting: the raft log cannot be written (%v)", d.appendErr)
	}
	if d.rdonly {
		return errors.New("not voting: the data directory is read-only")
	}
	return nil
}

// Stable-store keys hashicorp/raft writes when it casts a vote (its own
// as a candidate too) before answering; an error there means no vote.
var (
	keyLastVoteTerm = "LastVoteTerm"
	keyLastVoteCand = "LastVoteCand"
)

// voteGuard is the Raft stable store with votes refused while the box
// cannot append (voteRefusal). hashicorp/raft has no switch to stop a
// voter from voting, but it persists every vote before granting it and
// grants none when that write fails ("failed to persist vote"): refusing
// the write is refusing the vote, for others' elections and its own.
// The current term is never refused: raft panics if it cannot store it.
type voteGuard struct {
	raft.StableStore
	refuse func() error
}

func (s voteGuard) Set(key, val []byte) error {
	if string(key) == keyLastVoteCand {
		if err := s.refuse(); err != nil {
			return err
		}
	}
	return s.StableStore.Set(key, val)
}

func (s voteGuard) SetUint64(key []byte, val uint64) error {
	if string(key) == keyLastVoteTerm {
		if err := s.refuse(); err != nil {
			return err
		}
	}
	return s.StableStore.SetUint64(key, val)
}
