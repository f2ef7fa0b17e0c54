package node

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"masterorder/raftfsm"
)

// The feature level's raise (raftfsm/level.go holds the level itself).
// Every box reports the newest level its build knows, and whether it is
// in the trial boot of an update it has not committed yet, beside its
// card (GET /internal/disk, disk_peers.go). The leader raises the
// cluster's level to the lowest level every member knows once every
// member has reported that lately and none is in a trial: a box that may
// still fall back to its old build keeps the level where its old build
// applies everything.

// BuildReport is what a box says of its build to the others.
type BuildReport struct {
	// Level is the newest feature level this build knows.
	Level uint32 `json:"level"`
	// UpdatePending: the box runs an update in its trial boot (not yet
	// committed, so it may still fall back to its old build).
	UpdatePending bool `json:"updatePending"`
}

// buildFresh is how recent a member's report must be for a raise: a box
// that stopped answering may have been rolled back since.
const buildFresh = 3 * peerDiskEvery

// featureLevelEvery is how often the leader considers a raise.
const featureLevelEvery = time.Second

// Build is this box's own report.
func (n *Node) Build() BuildReport {
	r := BuildReport{Level: n.fsm.BuildLevel()}
	if n.opts.UpdatePending != nil {
		r.UpdatePending = n.opts.UpdatePending()
	}
	return r
}

// PeerBuild is a member's build as it last reported it, and when this box
// heard it (false: never, or the member runs a build from before the
// gate, which reports no level).
func (n *Node) PeerBuild(id string) (BuildReport, time.Time, bool) {
	if id == n.cfg.NodeID {
		return n.Build(), time.Now(), true
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	p, ok := n.disk.peers[id]
	if !ok || p.Build == nil {
		return BuildReport{}, time.Time{}, false
	}
	return *p.Build, p.at, true
}

// raiseTarget is the level the cluster may be raised to now: the lowest
// level every member of the configuration (voters and non-voters alike:
// every one applies the log) reported within buildFresh, none of them in
// a trial boot. ok is false with the reason when no raise may happen.
func (n *Node) raiseTarget(now time.Time) (level uint32, why string) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, "configuration: " + err.Error()
	}
	level = ^uint32(0)
	for _, srv := range f.Configuration().Servers {
		id := string(srv.ID)
		b, at, ok := n.PeerBuild(id)
		switch {
		case !ok:
			return 0, "member " + id + " has not reported its build"
		case now.Sub(at) > buildFresh:
			return 0, "member " + id + " has not reported its build lately"
		case b.UpdatePending:
			return 0, "member " + id + " runs an update it has not committed"
		}
		level = min(level, b.Level)
	}
	return level, ""
}

// featureLevelWorker runs on the ready leader: it raises the cluster's
// level when every member can apply the next one (raiseTarget).
func (n *Node) featureLevelWorker(ctx context.Context) {
	t := time.NewTicker(featureLevelEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		target, why := n.raiseTarget(time.Now())
		cur := n.fsm.FeatureLevel()
		if why != "" || target <= cur {
			continue
		}
		if err := n.raiseFeatureLevel(ctx, target); err != nil && ctx.Err() == nil {
			n.log.Warn("raise the feature level", "from", cur, "to", target, "error", err)
		}
	}
}

// raiseFeatureLevel proposes the raise and waits for it to be applied.
func (n *Node) raiseFeatureLevel(ctx context.Context, level uint32) error {
	cur := n.fsm.FeatureLevel()
	out, err := n.Propose(ctx, Proposal{Type: raftfsm.CmdFeatureLevel, Version: 1, Payload: raftfsm.EncodeFeatureLevel(level)})
	if err != nil {
		return err
	}
	now, perr := strconv.ParseUint(string(out), 10, 32)
	if perr != nil || uint32(now) < level {
		return fmt.Errorf("feature level raise answered %q", out)
	}
	n.log.Info("feature level raised: every box runs a build that applies it, new command versions are switched on",
		"from", cur, "to", now)
	return nil
}
