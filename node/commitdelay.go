package node

import (
	"sync"
	"sync/atomic"
	"time"
)

// Why the leader holds proposals for a moment: hashicorp/raft's leader
// writes its log (a bbolt commit and an fsync) once for whatever reached it
// while its last write ran, so under load the first proposal after a write
// starts the next one nearly alone, and the leader wrote its log almost
// twice as often per order as a follower (the SD card of the leader's box
// wore fastest). Holding a proposal for commitWindow while at least
// commitSiblings others are in flight lets proposals that arrive close
// together reach Raft together, as PostgreSQL's commit_delay and
// commit_siblings do. A proposal on a quiet leader is never held. Figures:
// README, Performance.
const (
	commitWindow   = 2 * time.Millisecond
	commitSiblings = 4
)

// commitDelay gathers a leader's concurrent proposals into windows.
type commitDelay struct {
	window   time.Duration
	siblings int64
	// after starts a window's timer (time.AfterFunc; a test's own clock).
	after func(time.Duration, func())

	inflight atomic.Int64
	held     atomic.Uint64 // proposals held, for /metrics
	mu       sync.Mutex
	open     chan struct{} // the window now filling; nil when none
}

func newCommitDelay() *commitDelay {
	return &commitDelay{window: commitWindow, siblings: commitSiblings,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// enter counts a proposal in flight until leave is called and, when at
// least siblings others are, holds it until the window it joined closes.
func (d *commitDelay) enter() (leave func()) {
	if d.inflight.Add(1) > d.siblings {
		d.held.Add(1)
		<-d.join()
	}
	return func() { d.inflight.Add(-1) }
}

// join returns the channel of the open window, opening one if none is.
func (d *commitDelay) join() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open == nil {
		ch := make(chan struct{})
		d.open = ch
		d.after(d.window, func() {
			d.mu.Lock()
			d.open = nil
			d.mu.Unlock()
			close(ch)
		})
	}
	return d.open
}
