package node_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/wallclock"
)

// A box whose card lost its clock file (or that never saved one) boots at
// its image's date, with no NTP and no member trusting its clock: it moves
// its clock forward to the wall time the cluster last stamped, calls it
// nothing better than unknown, and its stamps as leader never go back,
// even when its clock cannot be set at all.
func TestClockForwardToTheClusterStamp(t *testing.T) {
	epoch := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	fakes := []*wallclock.Fake{wallclock.NewFake(time.Now()), wallclock.NewFake(time.Now()), wallclock.NewFake(time.Now())}
	setter := []wallclock.Setter{fakes[0], fakes[1], fakes[2]}
	options := func(i int) node.Options {
		return node.Options{WallClock: fakes[i].Now, ClockSetter: setter[i], ClockSynced: func() bool { return false }}
	}
	c := nodetest.Start(t, 3, nil, options, nil)
	_, leader := c.WaitLeader(10 * time.Second)
	if err := leader.KV().Put(context.Background(), "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(10 * time.Second)
	stamped := time.UnixMilli(c.Nodes[0].FSM().LastWall())
	if time.Since(stamped) > time.Minute {
		t.Fatalf("the last stamp %v is not now", stamped)
	}

	c.StopNode(0)
	if err := os.Remove(filepath.Join(c.Configs[0].DataDir, wallclock.FileName)); err != nil {
		t.Fatal(err)
	}
	fakes[0].Jump(epoch)
	n0 := c.StartNode(0)
	deadline := time.Now().Add(20 * time.Second)
	for fakes[0].Now().Before(stamped) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if fakes[0].Now().Before(stamped) {
		t.Fatalf("box 0's clock %v is behind the cluster's stamp %v", fakes[0].Now(), stamped)
	}
	if st := n0.ClockStatus(); st.Trusted || st.ClusterTrusted || st.Source != wallclock.Unknown {
		t.Errorf("a stamp is a floor, not the real time: %+v", st)
	}
	if fakes[0].WentBack() {
		t.Error("box 0's clock went back")
	}

	// Box 0 again at the image's date, now unable to set its clock, and
	// the only box left with another: whichever leads, the stamps go on
	// from the last one, never back to 2025.
	c.StopNode(0)
	fakes[0].Jump(epoch)
	setter[0] = nil
	c.StopNode(2)
	before := time.UnixMilli(c.Nodes[1].FSM().LastWall())
	c.StartNode(0)
	for k := 0; k < 2; k++ {
		li, l := c.WaitLeader(20 * time.Second)
		if err := l.KV().Put(context.Background(), "k", []byte("again"), 0); err != nil {
			t.Fatal(err)
		}
		c.WaitConverged(10 * time.Second)
		got := time.UnixMilli(c.Nodes[li].FSM().LastWall())
		t.Logf("leader %d (clock %v) stamped %v", li, c.Nodes[li].WallClock().Format(time.RFC3339), got.Format(time.RFC3339))
		if got.Before(before) {
			t.Fatalf("leader %d stamped %v, before the previous stamp %v", li, got, before)
		}
		if st := c.Nodes[0].ClockStatus(); time.UnixMilli(st.ClusterWall).Before(before) || st.SetError == "" {
			t.Errorf("box 0 (clock stuck at %v) goes by %v; set error %q", fakes[0].Now(), time.UnixMilli(st.ClusterWall), st.SetError)
		}
		if li == 0 {
			break
		}
		// Hand the leadership to box 0, whose clock reads 2025.
		if err := l.Raft().LeadershipTransferToServer(raft.ServerID(c.Configs[0].NodeID), raft.ServerAddress(c.Configs[0].RaftAddr)).Error(); err != nil {
			t.Logf("transfer: %v", err)
		}
	}
	if fakes[0].Now().After(epoch.Add(time.Hour)) {
		t.Error("a box without a setter moved its clock")
	}
}
