package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/raftfsm"
)

// builds makes node i's options: a build of feature level levels[i]
// (every level allows everything: these tests are about the raise), in
// an update trial while pending[i] says so.
func builds(levels []*atomic.Uint32, pending []*atomic.Bool) func(i int) node.Options {
	return func(i int) node.Options {
		o := node.Options{Register: func(reg *raftfsm.Registry) {
			reg.SetFeatureLevels(levels[i].Load(), func(raftfsm.CommandType, uint32) uint8 { return 255 })
		}}
		if pending != nil {
			o.UpdatePending = pending[i].Load
		}
		return o
	}
}

func levelsAll(t *testing.T, c *nodetest.Cluster, want uint32, timeout time.Duration) {
	t.Helper()
	waitFor(t, "the feature level to reach every box", timeout, func() bool {
		for _, n := range c.Nodes {
			if n != nil && n.FSM().FeatureLevel() != want {
				return false
			}
		}
		return true
	})
}

// Options.UpdatePending: while a member says it runs an update in its
// trial boot, the leader does not raise the feature level, even though
// every member's build knows the new level; once it has committed, the
// level is raised to the lowest level every member knows, and the status
// shows it.
func TestFeatureLevelWaitsForUpdateTrial(t *testing.T) {
	levels := []*atomic.Uint32{{}, {}, {}}
	pending := []*atomic.Bool{{}, {}, {}}
	for _, l := range levels {
		l.Store(3)
	}
	levels[1].Store(2)
	pending[2].Store(true)
	c := nodetest.Start(t, 3, nodetest.PatientRaft, builds(levels, pending), nil)
	_, leader := c.WaitLeader(10 * time.Second)
	waitFor(t, "the leader to see box 2's trial", 30*time.Second, func() bool {
		m, ok := member(leader, c.Configs[2].NodeID)
		return ok && m.Build != nil && m.Build.UpdatePending && m.Build.Level == 3
	})
	time.Sleep(3 * time.Second) // three of the leader's rounds
	for i, n := range c.Nodes {
		if lv := n.FSM().FeatureLevel(); lv != 0 {
			t.Fatalf("box %d at level %d while box 2 is in its update trial", i, lv)
		}
	}
	pending[2].Store(false)
	levelsAll(t, c, 2, 30*time.Second) // box 1's build knows level 2 only
	st := leader.Status()
	if st.FeatureLevel != 2 || st.BuildLevel != leader.FSM().BuildLevel() {
		t.Fatalf("status featureLevel %d buildLevel %d", st.FeatureLevel, st.BuildLevel)
	}
	// Box 1 updated: the level follows.
	levels[1].Store(3)
	c.StopNode(1)
	c.StartNode(1)
	levelsAll(t, c, 3, 60*time.Second)
	c.AssertIdentical(10 * time.Second)
}

// A box whose build is older than the store's feature level joins as a
// non-voter (it receives the log) but is not made a voter, neither by the
// add nor by a promotion: both answer MEMBER_BUILD_OLD until it runs a
// build that knows the level.
func TestPromoteRefusesAnOlderBuild(t *testing.T) {
	levels := []*atomic.Uint32{{}, {}, {}, {}}
	for _, l := range levels {
		l.Store(2)
	}
	levels[3].Store(1)
	c := nodetest.Start(t, 3, nodetest.PatientRaft, builds(levels, nil), nil)
	levelsAll(t, c, 2, 30*time.Second)
	_, leader := c.WaitLeader(10 * time.Second)
	d := addBox(t, c, "d", c.Configs[0].Peers)
	c.StartNode(d)
	ctx := context.Background()
	// Added as a voter: it joins as a non-voter and stays one.
	if err := leader.AddMember(ctx, "d", c.Configs[d].RaftAddr, c.Configs[d].HTTPAddr, true); memberCode(err) != "MEMBER_BUILD_OLD" {
		t.Fatalf("adding a box of an older build as a voter: %v", err)
	}
	if m, ok := member(leader, "d"); !ok || m.Suffrage != "nonvoter" {
		t.Fatalf("d after the refused add: %+v %v", m, ok)
	}
	waitCaughtUp(t, c, d)
	if err := leader.PromoteMember(ctx, "d"); memberCode(err) != "MEMBER_BUILD_OLD" {
		t.Fatalf("promoting a box of an older build: %v", err)
	}
	if m, _ := member(leader, "d"); m.Suffrage != "nonvoter" {
		t.Fatalf("d after the refused promotion: %+v", m)
	}
	levels[3].Store(2)
	c.StopNode(d)
	c.StartNode(d)
	_, leader = c.WaitLeader(20 * time.Second)
	waitFor(t, "the leader to hear d's new build", 30*time.Second, func() bool {
		m, ok := member(leader, "d")
		return ok && m.Build != nil && m.Build.Level == 2
	})
	if err := leader.PromoteMember(ctx, "d"); err != nil {
		t.Fatalf("promoting d once updated: %v", err)
	}
	if m, _ := member(leader, "d"); m.Suffrage != "voter" {
		t.Fatalf("d after the promotion: %+v", m)
	}
}
