package node

// The sending side of a command: Propose commits it on the leader or
// forwards it there (forward.go); the state machine applies it (raftfsm).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"

	bolt "go.etcd.io/bbolt"
	"masterorder/kv"
	"masterorder/raftfsm"
)

var (
	// ErrNoQuorum means no leader could commit within the retry window;
	// the HTTP layer answers 503 NO_QUORUM with Retry-After.
	ErrNoQuorum = errors.New("no quorum: no leader could commit the command")
	// ErrUnknownOutcome means the command may or may not have committed
	// (leadership lost mid-request, response lost). Idempotent commands
	// are retried instead of returning it.
	ErrUnknownOutcome = errors.New("outcome unknown: leadership changed while the command was in flight")
	// ErrHalted means this node's state machine stopped (see logs).
	ErrHalted = raftfsm.ErrHalted
	// ErrNotSwitchedOn means a command type the cluster's feature level
	// does not allow yet: it works once every box runs a build that
	// applies it (node/featurelevel.go).
	ErrNotSwitchedOn = errors.New("not switched on in this cluster yet")
)

const (
	retryWindow  = 5 * time.Second
	applyTimeout = 5 * time.Second
)

// Proposal is one command to commit.
type Proposal struct {
	Type    raftfsm.CommandType
	Version uint8
	Flags   raftfsm.Flags
	Payload []byte
	// Idempotent commands (a guest order carries its Idempotency-Key) are
	// retried on the new leader even when the first attempt's outcome is
	// unknown: applying them twice answers with a replay.
	Idempotent bool
	// AnswerOnly: the proposer reads nothing of this node's files after
	// the answer (a placed order: its answer comes whole from Apply). Any
	// other proposal made on the leader returns once the leader's FSM
	// files hold it, so a local read after it sees it; the FSM commits
	// many batches at once (raftfsm/group.go), and the orders, the bulk
	// of the log, need not break the group.
	AnswerOnly bool
}

// Propose commits p: on the leader directly, elsewhere forwarded to the
// leader over the internal channel, retrying across leader changes for up
// to retryWindow.
func (n *Node) Propose(ctx context.Context, p Proposal) ([]byte, error) {
	if p.Version == 0 {
		p.Version = 1
	}
	// A paused FSM (a full card being waited out) still forwards: the
	// leader's replica answers. A halted one refuses.
	if err := n.fsm.Halted(); err != nil && (!errors.Is(err, raftfsm.ErrPaused) || n.raft.State() == raft.Leader) {
		return nil, err
	}
	deadline := time.Now().Add(retryWindow)
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var out []byte
		var err error
		if n.raft.State() == raft.Leader {
			var index uint64
			out, index, err = n.commitOnLeader(p)
			if err == nil {
				n.leaderSeen.Store(time.Now().UnixNano())
			}
			if err == nil && !p.AnswerOnly {
				// Applied here already: at most a commit of the group.
				if werr := n.fsm.WaitApplied(ctx, index); werr != nil {
					n.log.Debug("propose: local files not yet committed", "index", index, "error", werr)
				}
			}
		} else {
			out, err = n.forward(ctx, p)
		}
		retry := false
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, errRetry):
			retry = true
		case errors.Is(err, ErrDiskFull):
			// Refused before Raft saw it, by a leader handing over for
			// its full card: the next leader takes it.
			retry = true
		case errors.Is(err, ErrUnknownOutcome):
			if !p.Idempotent {
				return nil, err
			}
			retry = true
		default:
			return nil, err
		}
		if retry && n.ctx.Err() != nil {
			// This box is shutting down (an update's restart): the guest's
			// retry through another box is sooner than ours.
			retry = false
		}
		if retry {
			n.metrics.proposeRetries.Inc()
		}
		if !retry || time.Now().After(deadline) {
			if errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrDiskFull) {
				return nil, err
			}
			return nil, ErrNoQuorum
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("propose: %w", ctx.Err())
		case <-time.After(backoff + rand.N(backoff)):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// errRetry marks failures where the command surely did not commit.
var errRetry = errors.New("not applied; retry")

// commitOnLeader hands p to raft.Apply on this node, the leader, and
// waits for its state machine's result; index is the entry's.
func (n *Node) commitOnLeader(p Proposal) (out []byte, index uint64, err error) {
	if err := n.fsm.Halted(); err != nil {
		// A leader that cannot apply must not commit: hand over.
		n.stepDownIfHalted()
		return nil, 0, fmt.Errorf("%w: %v", errRetry, err)
	}
	if n.diskRefusesWrites() {
		// Below the hard floor: refuse before SQLite or bbolt meet a
		// full card mid-commit, and let a box with room lead.
		n.handOverForDisk(time.Now())
		return nil, 0, ErrDiskFull
	}
	stamp, ok := n.clock.stamp()
	if !ok || !n.ready.Load() {
		return nil, 0, fmt.Errorf("%w: leader not ready", errRetry)
	}
	cmd := raftfsm.Command{Type: p.Type, Version: p.Version, Flags: p.Flags, FSMTime: stamp,
		WallTime: n.ClusterWall().UnixMilli(), Payload: p.Payload}
	start := time.Now()
	f := n.raft.Apply(cmd.Encode(), applyTimeout)
	if err := n.await(f, 0); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, 0, fmt.Errorf("%w: %v", errRetry, err)
		default:
			// ErrLeadershipLost, ErrEnqueueTimeout: it may still commit.
			// ErrRaftShutdown too: Raft also answers it for entries that
			// already committed but could not be handed to a busy FSM
			// before shutdown, so it is no proof of "not applied".
			return nil, 0, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
		}
	}
	n.metrics.observeCommit(start)
	resp, ok := f.Response().(raftfsm.Response)
	if !ok {
		return nil, 0, fmt.Errorf("unexpected fsm response %T", f.Response())
	}
	if errors.Is(resp.Err, raftfsm.ErrHalted) {
		// Committed, so the others apply it, but this node's FSM halted
		// on it: the result is unknown here.
		n.stepDownIfHalted()
		return nil, 0, fmt.Errorf("%w: %v", ErrUnknownOutcome, resp.Err)
	}
	return resp.Data, f.Index(), resp.Err
}

// kvProposer proposes the KV's commands (version 1) for kv.Client.
type kvProposer struct{ n *Node }

func (k kvProposer) Propose(ctx context.Context, t raftfsm.CommandType, payload []byte) ([]byte, error) {
	return k.n.Propose(ctx, Proposal{Type: t, Version: 1, Payload: payload})
}

var _ kv.Proposer = kvProposer{}

// kvDue peeks whether any coordination key has lapsed.
func (n *Node) kvDue() bool {
	due := false
	now := n.FSMNow()
	n.fsm.View(func(tx *bolt.Tx) error {
		due = kv.Due(tx, now)
		return nil
	})
	return due
}
