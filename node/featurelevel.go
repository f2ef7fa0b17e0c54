package node

import (
	"context"
	"fmt"
	"net/http"
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
// level when every member can apply the next one (raiseTarget), and says
// once per member and level when a member's build is below the level (a
// box rolled back after the raise, or added with an old build: it halts
// at the first entry it cannot apply).
func (n *Node) featureLevelWorker(ctx context.Context) {
	t := time.NewTicker(featureLevelEvery)
	defer t.Stop()
	warned := map[string]uint32{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := n.fsm.FeatureLevel()
		n.warnOldBuilds(cur, warned)
		target, why := n.raiseTarget(time.Now())
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

// warnOldBuilds logs each member whose reported build is below the
// cluster's level, once per member and level.
func (n *Node) warnOldBuilds(level uint32, warned map[string]uint32) {
	if level == 0 {
		return
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, srv := range f.Configuration().Servers {
		id := string(srv.ID)
		b, _, ok := n.PeerBuild(id)
		if ok && b.Level < level && warned[id] != level {
			warned[id] = level
			n.log.Warn("a member runs a build older than the store's feature level: it halts at the first entry it cannot apply; update it",
				"member", id, "buildLevel", b.Level, "featureLevel", level)
		}
	}
}

// joinBuildWait is how long an add waits for a new box to answer with
// its build (it may still be starting).
const joinBuildWait = 5 * time.Second

// checkVoterBuild refuses to make a voter of a box whose build cannot
// apply the log at the store's feature level (an old build): asked afresh
// (again for up to wait while it does not answer), it must report a level
// at least the store's. A box that does not answer is let through with a
// warning, as before the feature level (a box added before it runs, or
// one that is down); the leader's warning and the status then tell if
// its build is old. A store without a level yet (0) checks nothing.
func (n *Node) checkVoterBuild(ctx context.Context, id, raftAddr string, wait time.Duration) error {
	level := n.fsm.FeatureLevel()
	if level == 0 {
		return nil
	}
	deadline := time.Now().Add(wait)
	for !n.fetchPeerDisk(ctx, id, raftAddr) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			n.log.Warn("a new voter did not answer with its build: made a voter without the check", "member", id, "featureLevel", level)
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _, ok := n.PeerBuild(id)
	switch {
	case !ok:
		return memberErr(http.StatusConflict, "MEMBER_BUILD_OLD",
			"member %s runs a build from before the feature level; the store is at level %d: it stays a non-voter; update it, then promote it", id, level)
	case b.Level < level:
		return memberErr(http.StatusConflict, "MEMBER_BUILD_OLD",
			"member %s runs a build of feature level %d; the store is at level %d: it stays a non-voter; update it, then promote it", id, b.Level, level)
	}
	return nil
}
