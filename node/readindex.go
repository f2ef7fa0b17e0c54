package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// readRounds shares one ReadIndex round among concurrent callers. A round
// proves read-your-writes only to callers that arrived before it started
// (a write acknowledged before a caller arrived is in the commit index the
// round reads). So a caller arriving while a round is in flight does not
// join it: it waits for the next round, which starts when the current one
// ends and serves everyone who queued meanwhile. Under a burst of guest
// GETs that is at most two rounds in flight-or-queued, however many
// callers.
type readRounds struct {
	mu      sync.Mutex
	running bool
	next    *readRound // queued behind the running round; nil if nobody waits
	rounds  atomic.Uint64
}

type readRound struct {
	done     chan struct{}
	deadline time.Time // the latest of its callers' deadlines (set before it starts)
	idx      uint64
	err      error
}

// do returns the index of a round that started after the call, run by
// fn. A round serves callers with different deadlines: it runs until the
// latest of them (at most applyTimeout), as one caller's own try would
// have, and only the node's shutdown cancels it; a caller that gives up
// leaves the round to the others.
func (g *readRounds) do(ctx context.Context, fn func(ctx context.Context) (uint64, error), parent context.Context) (uint64, error) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(applyTimeout)
	}
	start := false
	g.mu.Lock()
	r := g.next
	if r == nil {
		r = &readRound{done: make(chan struct{})}
		if g.running {
			g.next = r
		} else {
			g.running, start = true, true
		}
	}
	if d.After(r.deadline) {
		r.deadline = d
	}
	g.mu.Unlock()
	if start {
		go g.run(r, fn, parent)
	}
	select {
	case <-r.done:
		return r.idx, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run runs r, then each round that queued while the previous one ran.
func (g *readRounds) run(r *readRound, fn func(ctx context.Context) (uint64, error), parent context.Context) {
	for r != nil {
		g.rounds.Add(1)
		g.mu.Lock()
		d := r.deadline // no caller joins r any more: it is not g.next
		g.mu.Unlock()
		if limit := time.Now().Add(applyTimeout); d.After(limit) {
			d = limit
		}
		ctx, cancel := context.WithDeadline(parent, d)
		r.idx, r.err = fn(ctx)
		cancel()
		close(r.done)
		g.mu.Lock()
		r = g.next
		g.next = nil
		if r == nil {
			g.running = false
		}
		g.mu.Unlock()
	}
}

// ReadIndexRounds reports how many ReadIndex rounds this node ran: on the leader
// the heartbeat rounds confirming leadership (its own reads and those
// followers asked for), on a follower the requests it sent to the leader.
func (n *Node) ReadIndexRounds() uint64 {
	return n.leaderRounds.rounds.Load() + n.remoteRounds.rounds.Load()
}

// sharedLeaderReadIndex is leaderReadIndexWithin, one round shared by all local
// reads and all followers' /internal/readindex requests that arrive while
// the previous round runs.
func (n *Node) sharedLeaderReadIndex(ctx context.Context) (uint64, error) {
	return n.leaderRounds.do(ctx, func(rctx context.Context) (uint64, error) {
		d, _ := rctx.Deadline() // run always sets one
		return n.leaderReadIndexWithin(time.Until(d))
	}, n.ctx)
}

// leaderReadIndexWithin is the ReadIndex step on the leader: its commit
// index, confirmed by a heartbeat round that it is still the leader.
func (n *Node) leaderReadIndexWithin(timeout time.Duration) (uint64, error) {
	if n.raft.State() != raft.Leader || !n.ready.Load() {
		return 0, errors.New("not the ready leader")
	}
	idx := n.raft.CommitIndex()
	if err := n.verifyLeader(timeout); err != nil {
		return 0, fmt.Errorf("verify leader: %w", err)
	}
	return idx, nil
}

// ConsistentRead waits until this node has applied everything the cluster
// had committed when it was called (ReadIndex), so a local read after it
// sees every acknowledged write, on any node.
func (n *Node) ConsistentRead(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, retryWindow)
	defer cancel()
	backoff := 10 * time.Millisecond
	for {
		idx, err := n.readIndex(ctx)
		if err == nil {
			return n.fsm.WaitApplied(ctx, idx)
		}
		if n.raft.State() != raft.Leader && n.cutOff() {
			return ErrNoQuorum
		}
		select {
		case <-ctx.Done():
			return ErrNoQuorum
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// ReadLocal prepares a read of the local replica. With a quorum it is
// ConsistentRead (read-your-writes) and stale is false. Without one (two
// boxes dead, or this one cut off) the kitchen still needs the orders this
// box holds: it answers stale = true instead of an error. It decides so
// quickly only on evidence: no leader known, or none heard from for a
// while, for staleAfter (and only degradedTry while the previous read
// found no quorum either). While a leader is in contact, a slow ReadIndex
// (a busy box, an election just over) is waited for as ConsistentRead
// does, so reads stay read-your-writes under load.
func (n *Node) ReadLocal(ctx context.Context) (stale bool, err error) {
	if err := n.fsm.Halted(); err != nil {
		return false, err
	}
	if n.voteRefusal() != nil {
		// The card takes no Raft log writes (disk.go): no newer entry can
		// reach this replica, so waiting for one only delays the answer.
		n.degraded.Store(true)
		return true, nil
	}
	patience := n.staleAfter()
	if n.degraded.Load() {
		patience = degradedTry
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, retryWindow)
	defer cancel()
	backoff := 10 * time.Millisecond
	for wctx.Err() == nil {
		// Each try is bounded: a leader that lost power answers nothing.
		tctx, tcancel := context.WithTimeout(wctx, time.Second)
		idx, err := n.readIndex(tctx)
		tcancel()
		if err == nil {
			// The cluster answered; applying needs no quorum.
			if n.fsm.WaitApplied(wctx, idx) == nil {
				n.degraded.Store(false)
				return false, nil
			}
			break
		}
		if !n.inContact() && time.Since(start) >= patience {
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
	if ctx.Err() != nil {
		return false, ctx.Err() // the caller went away; nothing to serve
	}
	if err := n.fsm.Halted(); err != nil {
		return false, err
	}
	n.degraded.Store(true)
	return true, nil
}

// degradedTry is how long a read tries for a ReadIndex while the previous
// read found no quorum: long enough for a live leader's round trip.
const degradedTry = 300 * time.Millisecond

// staleAfter is how long a read without contact to a leader waits for one
// before it serves the replica as stale: an election usually completes
// within it, so reads stay read-your-writes through a failover.
func (n *Node) staleAfter() time.Duration {
	return min(max(time.Second, 4*n.cfg.Raft.ElectionTimeout.Duration), 3*time.Second)
}

// inContact reports that this node leads (a leader without a quorum steps
// down within its lease) or heard from a known leader lately.
func (n *Node) inContact() bool {
	if n.raft.State() == raft.Leader {
		return true
	}
	if _, id := n.raft.LeaderWithID(); id == "" {
		return false
	}
	return time.Since(n.raft.LastContact()) <= max(time.Second, 2*n.cfg.Raft.ElectionTimeout.Duration)
}

// readIndex is the commit index of a ReadIndex round that started after
// the call; concurrent callers share rounds (readindex.go).
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.sharedLeaderReadIndex(ctx)
	}
	return n.remoteRounds.do(ctx, n.remoteReadIndex, n.ctx)
}

// remoteReadIndex asks the leader for a ReadIndex round.
func (n *Node) remoteReadIndex(ctx context.Context) (uint64, error) {
	_, addr := n.LeaderID()
	if addr == "" {
		return 0, errors.New("no leader known")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(addr, "/internal/readindex"), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Load().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read index from %s: %s", addr, b)
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// cutOff reports that this node has heard from no leader for well over an
// election (a partitioned follower), as opposed to a failover in progress.
func (n *Node) cutOff() bool {
	grace := max(2*time.Second, 3*n.cfg.Raft.ElectionTimeout.Duration)
	return cutOffSince(time.Now(), grace, n.started, n.raft.LastContact(), time.Unix(0, n.leaderSeen.Load()))
}

// cutOffSince: no sign of a leader for longer than grace, counting from
// the latest of the start, the last message from a leader, and this box's
// own leadership. A leader that has just handed over (a rolling update's
// transfer) has heard from no leader since it became one: without its
// own leadership counted it would refuse at once, in the moment before it
// learns the new leader, what a follower would retry.
func cutOffSince(now time.Time, grace time.Duration, started, lastContact, leaderSeen time.Time) bool {
	last := started
	for _, t := range []time.Time{lastContact, leaderSeen} {
		if t.After(last) {
			last = t
		}
	}
	return now.Sub(last) > grace
}

// verifyLeader confirms leadership with a heartbeat round, bounded: Raft's
// VerifyLeader has no timeout of its own and can wait indefinitely when
// leadership is lost in the middle of the round.
func (n *Node) verifyLeader(timeout time.Duration) error {
	err := n.await(n.raft.VerifyLeader(), timeout)
	if errors.Is(err, errFutureTimeout) {
		return errors.New("verify leader: timed out")
	}
	return err
}
