package node

import (
	"time"

	"masterorder/node/restart"
	"masterorder/node/wallclock"
)

// A box has no real-time clock: it boots at its image's date. Its clock
// is kept right by wallclock.Keeper, forward only, from (in this file):
//   - the last time it knew (the clock file, saved every clockSaveEvery);
//   - the wall time the cluster last stamped (raftfsm WallAt), a floor;
//   - a member whose clock is trusted (its report on the internal
//     channel, disk_peers.go): the box then trusts its own ("cluster");
//   - a manager's tap (ClockFromManager, called by the domain after the
//     command applied);
//   - NTP, which the keeper leaves the clock to.

// clockEvery is how often the box compares its clock with the cluster's
// stamp; clockSaveEvery how often it writes the last time it knew.
const (
	clockEvery     = time.Second
	clockSaveEvery = time.Minute
)

// ManagerTimeFresh is how old (in FSM time) a manager's time may be when
// a box applies it and still call its clock set by a manager: a box that
// catches up later only moves forward to it.
const ManagerTimeFresh = 2 * time.Minute

// ClockStatus is the clock part of the cluster status.
type ClockStatus struct {
	wallclock.State
	// ClusterTrusted: this box or a member it can reach has a trusted
	// clock. When false, no source gave the time (a new store, no
	// internet, every box cut): the console asks a manager to set it.
	ClusterTrusted bool `json:"clusterTrusted"`
	// ClusterWall is the time the boxes go by (Unix ms): this box's clock
	// or the cluster's stamp, whichever is later. It is what the console
	// asks a manager to confirm.
	ClusterWall int64 `json:"clusterWall"`
}

// PeerClock is a member's clock as it last reported it (absent: never, or
// a version without one).
func (n *Node) PeerClock(id string) *wallclock.State {
	if id == n.cfg.NodeID {
		st := n.wall.State()
		return &st
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	return n.disk.peers[id].Clock
}

func (n *Node) openClock() error {
	synced := n.opts.ClockSynced
	if synced == nil {
		synced = wallclock.KernelSynced
	}
	boot := n.opts.BootID
	if boot == "" {
		boot = restart.BootID("/")
	}
	k, err := wallclock.Open(wallclock.Options{Dir: n.cfg.DataDir, Now: n.opts.WallClock, Setter: n.opts.ClockSetter,
		Synced: synced, BootID: boot})
	if err != nil {
		return err
	}
	n.wall = k
	return nil
}

// watchClock moves the clock forward to the cluster's stamp and saves the
// last known time, until the node stops (and once more then).
func (n *Node) watchClock() {
	defer n.wg.Done()
	t := time.NewTicker(clockEvery)
	defer t.Stop()
	var saved time.Time
	for {
		n.clockTick()
		if time.Since(saved) >= clockSaveEvery {
			saved = time.Now()
			n.saveClock()
		}
		select {
		case <-n.ctx.Done():
			n.saveClock()
			return
		case <-t.C:
		}
	}
}

func (n *Node) saveClock() {
	if err := n.wall.Save(); err != nil {
		n.log.Warn("could not save the last known time", "error", err)
	}
}

// clockTick moves the clock forward to the cluster's stamp.
func (n *Node) clockTick() {
	if stamp := n.stampedWall(); !stamp.IsZero() {
		if n.wall.Advance(stamp, wallclock.Unknown) {
			n.log.Info("clock moved forward to the time the cluster last stamped", "to", stamp.UTC().Format(time.RFC3339))
		}
	}
}

// stampedWall is the least the leader's wall clock reads now: the last
// stamp this box applied plus the time since (zero: never stamped).
func (n *Node) stampedWall() time.Time {
	wall, at := n.fsm.WallAt()
	if wall <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(wall).Add(time.Since(at))
}

// ClusterWall is the time the boxes go by: this box's clock, the last
// time it knew, or the cluster's stamp, whichever is latest. A leader
// stamps it on commands (receipts, tickets, audit), and staff tokens and
// reports read it, so a box whose clock could not be set still never goes
// back and agrees with the others. An NTP-synced box goes by its own
// clock: NTP is the one source that may correct a time that ran ahead
// (the stamps would otherwise carry it on for ever).
func (n *Node) ClusterWall() time.Time {
	if n.wall.Synced() {
		return n.wall.Now()
	}
	t := n.wall.Floor()
	if s := n.stampedWall(); s.After(t) {
		t = s
	}
	return t
}

// ClockStatus is this box's clock and whether any member's is trusted.
func (n *Node) ClockStatus() ClockStatus {
	st := ClockStatus{State: n.wall.State(), ClusterWall: n.ClusterWall().UnixMilli()}
	st.ClusterTrusted = st.Trusted
	if st.ClusterTrusted {
		return st
	}
	var trusted []string
	n.disk.mu.Lock()
	for id, p := range n.disk.peers {
		if p.Clock != nil && p.Clock.Trusted {
			trusted = append(trusted, id)
		}
	}
	n.disk.mu.Unlock()
	for _, id := range trusted {
		if ok, _ := n.probe.state(id); ok {
			st.ClusterTrusted = true
		}
	}
	return st
}

// peerClock takes a member's clock, reported on the internal channel: a
// trusted one is the real time (the report is a little old when read, so
// it is a lower bound).
func (n *Node) peerClock(id string, c *wallclock.State) {
	if c == nil || !c.Trusted || c.Wall <= 0 {
		return
	}
	if n.wall.Advance(time.UnixMilli(c.Wall), wallclock.Cluster) {
		n.log.Info("clock moved forward to a member's trusted clock", "member", id, "source", c.Source,
			"to", time.UnixMilli(c.Wall).UTC().Format(time.RFC3339))
	}
}

// ClockFromManager moves this box's clock forward to a manager's time,
// which the command that carried it stamped at FSM time stamp and index:
// the time now is wall plus the FSM time since. A box applying an old
// entry (replaying its log at start, catching up after being off) only
// moves forward to it: it cannot tell how long the store was dark since.
// A manager's time earlier than the clock leaves it (never back) but
// confirms it.
func (n *Node) ClockFromManager(wall, stamp int64, index uint64) {
	age := time.Duration(max(0, n.FSMNow()-stamp)) * time.Millisecond
	to := time.UnixMilli(wall).Add(age)
	from := wallclock.Manager
	if index <= n.startIndex || age > ManagerTimeFresh {
		from = wallclock.Unknown
	}
	moved := n.wall.Advance(to, from)
	n.log.Info("a manager set the time", "to", to.UTC().Format(time.RFC3339), "moved", moved, "fresh", from == wallclock.Manager)
	n.managerClock.Store(index)
}

// ManagerClockIndex is the log index of the last manager's time this box
// handled: the FSM wakes readers waiting for an index before its
// listeners run, so a handler that answers the clock after a tap waits
// for this to move too.
func (n *Node) ManagerClockIndex() uint64 { return n.managerClock.Load() }
