package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// leaderClock stamps FSM time on the leader: the FSM time when it became
// leader plus monotonic time since. Boxes boot offline with wrong wall
// clocks, so no TTL may depend on a wall clock.
type leaderClock struct {
	mu    sync.Mutex
	base  int64
	start time.Time // carries Go's monotonic reading
	set   bool
}

func (c *leaderClock) reset(base int64) {
	c.mu.Lock()
	c.base, c.start, c.set = base, time.Now(), true
	c.mu.Unlock()
}

func (c *leaderClock) clear() {
	c.mu.Lock()
	c.set = false
	c.mu.Unlock()
}

func (c *leaderClock) stamp() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set {
		return 0, false
	}
	return c.base + time.Since(c.start).Milliseconds(), true
}

// FSMNow estimates the current FSM time for local reads: the leader's
// clock, or on a follower the last applied FSM time moved on by this box's
// monotonic clock since it applied it, so token expiry and lock listings
// stay current between commands. The estimate never runs ahead of the
// leader's clock (expiry is judged strictly inside Apply; reads only need
// to hide what has surely lapsed). Before any FSM time exists it is 0.
func (n *Node) FSMNow() int64 {
	if t, ok := n.clock.stamp(); ok {
		return t
	}
	cur, at := n.fsm.NowAt()
	if cur == 0 {
		return 0
	}
	return cur + time.Since(at).Milliseconds()
}

// worker is a leader-only background job.
type worker struct {
	name string
	run  func(ctx context.Context)
}

// AddLeaderWorker registers a job that runs while this node is the ready
// leader; its context ends when leadership is lost or the node stops.
func (n *Node) AddLeaderWorker(name string, run func(ctx context.Context)) {
	n.workersMu.Lock()
	n.workers = append(n.workers, worker{name: name, run: run})
	n.workersMu.Unlock()
}

// watchLeadership reacts to leadership changes: a new leader issues a
// Barrier (so everything committed before it is applied), sets its FSM
// clock from the applied FSM time, then serves consistent reads, stamps
// commands and runs the leader-only workers.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	cancelWorkers := func() {}
	var workersWG sync.WaitGroup
	stopWorkers := func() {
		n.ready.Store(false)
		n.clock.clear()
		cancelWorkers()
		workersWG.Wait()
	}
	defer stopWorkers()
	ch := n.raft.LeaderCh()
	for {
		select {
		case <-n.ctx.Done():
			return
		case isLeader := <-ch:
			n.leaderSeen.Store(time.Now().UnixNano())
			stopWorkers()
			if !isLeader {
				continue
			}
			if !n.awaitBarrier() {
				continue
			}
			if n.fsm.Halted() != nil {
				n.stepDownIfHalted()
				continue
			}
			// The FSM time went on while no command was stamped (a quiet
			// spell, the election): start from this box's estimate, not
			// from the last stamp, or every TTL would stretch by the gap.
			base := n.FSMNow()
			if base == 0 {
				// A brand-new cluster starts its FSM clock at this box's
				// wall clock, for readable numbers; only differences count.
				base = n.opts.WallClock().UnixMilli()
				if base < 0 {
					base = 0
				}
			}
			n.clock.reset(base)
			n.ready.Store(true)
			// Stamp the new term's FSM time into the log at once, so every
			// follower's clock is current before the first real write.
			go func() {
				if _, err := n.kv.Expire(n.ctx, 1000); err != nil {
					n.log.Debug("first stamp after election", "error", err)
				}
			}()
			n.log.Info("leader ready", "term", n.raft.CurrentTerm(), "fsmTime", base)
			ctx, cancel := context.WithCancel(n.ctx)
			cancelWorkers = cancel
			n.workersMu.Lock()
			for _, w := range n.workers {
				workersWG.Add(1)
				go func(w worker) {
					defer workersWG.Done()
					w.run(ctx)
				}(w)
			}
			n.workersMu.Unlock()
		}
	}
}

// readyBound is how long a new leader keeps retrying its barrier before it
// hands the leadership to another member: a leader that never becomes
// ready would hold the cluster without serving it.
const readyBound = 10 * time.Second

// awaitBarrier issues the post-election Barrier until it succeeds (true),
// with backoff; false when leadership went meanwhile, the node stops, or the
// bound passed and the leadership was handed on.
func (n *Node) awaitBarrier() bool {
	backoff := 100 * time.Millisecond
	start := time.Now()
	for {
		err := n.barrier()
		if err == nil {
			return true
		}
		if n.raft.State() != raft.Leader || n.ctx.Err() != nil {
			n.log.Warn("barrier after election failed; no longer the leader", "error", err)
			return false
		}
		if time.Since(start) > readyBound && n.steppingDown.CompareAndSwap(false, true) {
			n.log.Error("leader cannot apply its barrier: handing the leadership to another member", "error", err, "after", time.Since(start).Round(time.Millisecond))
			terr := n.raft.LeadershipTransfer().Error()
			n.steppingDown.Store(false)
			if terr == nil {
				return false
			}
			// No member to hand over to (a single box, the others
			// behind): go on trying, and hand over later.
			n.log.Warn("leadership transfer after failed barriers", "error", terr)
			start = time.Now()
		} else {
			n.log.Warn("barrier after election failed; retrying", "error", err, "backoff", backoff)
		}
		select {
		case <-n.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (n *Node) barrier() error {
	if n.opts.FailBarrier != nil {
		if err := n.opts.FailBarrier(); err != nil {
			return err
		}
	}
	if err := n.await(n.raft.Barrier(5*time.Second), 10*time.Second); err != nil {
		return err
	}
	// Everything before the barrier is applied; it is in the files too,
	// so the new leader's workers and local reads start from all of it.
	return n.fsm.Flush()
}

// errFutureTimeout: a Raft future gave no answer within its bound.
var errFutureTimeout = errors.New("raft future: no answer in time")

// await waits for a Raft future's answer, within timeout (0: no bound)
// and no longer than the node runs. Raft answers nothing for an entry it
// handed to the FSM goroutine when it shuts down before applying it
// (Barrier and Apply futures carry no shutdown channel), so an unbounded
// wait there would hold Stop forever. ErrRaftShutdown then means "unknown",
// as it does from Raft itself.
func (n *Node) await(f raft.Future, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when Raft answers, if ever
	var bound <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		bound = t.C
	}
	select {
	case err := <-done:
		return err
	case <-bound:
		return errFutureTimeout
	case <-n.ctx.Done():
		return raft.ErrRaftShutdown
	}
}

// stepDownIfHalted hands the leadership to another member when this
// node's state machine halted (a command type it does not know, a disk
// error): a halted leader would commit every command and answer each
// with an error, or serve as the source of stale snapshots.
func (n *Node) stepDownIfHalted() {
	err := n.fsm.Halted()
	if err == nil || n.raft.State() != raft.Leader || !n.steppingDown.CompareAndSwap(false, true) {
		return
	}
	n.log.Error("state machine halted on the leader: handing the leadership to another member", "error", err)
	go func() {
		defer n.steppingDown.Store(false)
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer from the halted leader", "error", err)
		}
	}()
}

// IsLeader reports whether this node is the ready leader.
func (n *Node) IsLeader() bool {
	return n.raft != nil && n.raft.State() == raft.Leader && n.ready.Load()
}

// LeaderID returns the current leader's id and raft address, if known:
// its address in the configuration (the name of its internal channel,
// dialled where the peer book finds it), not the one its messages carry.
func (n *Node) LeaderID() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	if i == "" {
		return "", ""
	}
	if c := n.configuredRaftAddr(string(i)); c != "" {
		return string(i), c
	}
	// A member no configuration lists yet: its own word, without the id
	// the transport writes before it (peerAddress).
	addr = string(a)
	if _, rest, ok := strings.Cut(addr, "@"); ok {
		addr = rest
	}
	return string(i), addr
}

// expireWorker removes lapsed coordination keys (they are invisible
// already; this keeps the file small). It proposes only when keys are due.
func (n *Node) expireWorker(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !n.kvDue() {
			continue
		}
		if _, err := n.kv.Expire(ctx, 1000); err != nil && ctx.Err() == nil {
			n.log.Warn("expire keys", "error", err)
		}
	}
}
