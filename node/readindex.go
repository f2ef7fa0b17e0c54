package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
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
