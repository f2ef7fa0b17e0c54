package orders_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
)

// The version gate during a rolling update (issue 38). Boxes 0 and 1 run
// the new build (RegisterGateNew: feature level 2 switches on this build's
// newer command versions), box 2 the old one (level 1: version 1 of
// everything). The new boxes propose only what the old one applies; a new
// box rolled back to the old build mid-update applies the log; a box in
// the trial boot of its update keeps the level down; once the last box
// runs the new build and has committed it, the leader raises the level
// and only then are new versions proposed (a box rolled back after that
// halts on them, which is why the raise waits for the commit). The level
// survives a restart and a rebuild from a snapshot.
func TestVersionGateDuringRollingUpdate(t *testing.T) {
	var newBuild, pending [3]atomic.Bool
	newBuild[0].Store(true)
	newBuild[1].Store(true)
	s := startStoreWith(t, 3, fastWindows, func(i int) node.Options {
		o := orders.NodeOptions()
		o.Register = orders.RegisterGateOld
		if newBuild[i].Load() {
			o.Register = orders.RegisterGateNew
		}
		o.UpdatePending = pending[i].Load
		return o
	})
	waitLevel := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok := true
			for _, n := range s.c.Nodes {
				ok = ok && n != nil && n.FSM().FeatureLevel() == want
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var got []uint32
				for _, n := range s.c.Nodes {
					if n != nil {
						got = append(got, n.FSM().FeatureLevel())
					}
				}
				t.Fatalf("feature level %v, want %d on every box", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	notHalted := func() {
		t.Helper()
		for i, n := range s.c.Nodes {
			if err := n.FSM().Halted(); err != nil {
				t.Fatalf("box %d halted: %v", i, err)
			}
		}
	}
	// Traffic through every box, new-version commands among it: a guest
	// order (placeOrder 5 in the new table), a stock change (setStock 2),
	// a kitchen status change (setOrderStatus 2) and a menu edit
	// (upsertMenu 2).
	sess := s.openSession("G1")
	g := s.guest(sess)
	// ok retries a call while the cluster elects a leader after a restart
	// (503, or no answer yet), then requires a 200.
	ok := func(what string, call func() resp) resp {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := call()
			if r.Status == 200 {
				return r
			}
			if r.Status != 503 && r.Status != -1 || time.Now().After(deadline) {
				t.Fatalf("%s: %d %s", what, r.Status, r.Body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	traffic := func(boxes ...int) {
		t.Helper()
		for _, b := range boxes {
			key := newKey()
			c := cart(line("gyoza", 1), line("tea", 1))
			c["allowRepeat"] = true
			r := ok("order through box "+strconv.Itoa(b), func() resp { return g.orderPast(b, key, c) })
			var o success
			r.json(t, &o)
			ok("stock", func() resp {
				return s.staff(b, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 1000})
			})
			ok("kitchen status", func() resp {
				return s.staff(b, "PATCH", "/api/staff/orders/"+strconv.FormatInt(o.OrderID, 10), map[string]string{"status": "COOKING"})
			})
			ok("menu", func() resp {
				return s.staff(b, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300})
			})
		}
	}

	// 1. Mixed: the leader raised the store from "none" to level 1, the
	// newest every box knows, and the new boxes propose version 1.
	waitLevel(1)
	for i := 0; i < 2; i++ {
		if v := s.svcs[i].ProposedVersion(orders.CmdPlaceOrder); v != 1 {
			t.Fatalf("new box %d at level 1 proposes placeOrder version %d, want 1", i, v)
		}
	}
	s.seedMenu()
	traffic(0, 1, 2)
	s.c.AssertIdentical(30 * time.Second)
	notHalted()

	// 2. Box 1's update fails and it goes back to the old build: it
	// applies everything the others committed meanwhile and after.
	s.c.StopNode(1)
	traffic(0, 2)
	newBuild[1].Store(false)
	s.c.StartNode(1)
	traffic(0, 1, 2)
	s.c.AssertIdentical(30 * time.Second)
	notHalted()
	newBuild[1].Store(true)
	s.c.StopNode(1)
	s.c.StartNode(1)

	// 3. The last box boots the new build in its trial: every box now
	// knows level 2, but the level stays at 1 while box 2 may still fall
	// back to its old build.
	pending[2].Store(true)
	newBuild[2].Store(true)
	s.c.StopNode(2)
	s.c.StartNode(2)
	deadline := time.Now().Add(30 * time.Second)
	for !reportsTrial(s, 2) {
		if time.Now().After(deadline) {
			t.Fatal("the leader's status never showed box 2's update trial")
		}
		time.Sleep(50 * time.Millisecond)
	}
	traffic(0, 1, 2)
	time.Sleep(3 * time.Second) // three of the leader's rounds (featureLevelEvery)
	for i, n := range s.c.Nodes {
		if lv := n.FSM().FeatureLevel(); lv != 1 {
			t.Fatalf("box %d at level %d while box 2 is in its update trial", i, lv)
		}
	}
	if v := s.svcs[2].ProposedVersion(orders.CmdPlaceOrder); v != 1 {
		t.Fatalf("box 2 in its trial proposes placeOrder version %d, want 1", v)
	}

	// 4. Box 2 commits its update: the leader raises the level and every
	// box proposes the new versions.
	pending[2].Store(false)
	waitLevel(2)
	for i := range s.c.Nodes {
		if v, want := s.svcs[i].ProposedVersion(orders.CmdPlaceOrder), orders.NewestVersion(orders.CmdPlaceOrder); v != want {
			t.Fatalf("box %d at level 2 proposes placeOrder version %d, want %d", i, v, want)
		}
	}
	traffic(0, 1, 2)
	s.c.AssertIdentical(30 * time.Second)
	notHalted()
	st := s.c.Nodes[0].Status()
	if st.FeatureLevel != 2 || st.BuildLevel != 2 {
		t.Fatalf("status featureLevel %d buildLevel %d, want 2 and 2", st.FeatureLevel, st.BuildLevel)
	}

	// 5. The level survives a restart, and a rebuild of the replica from
	// its snapshot and log (the FSM files deleted).
	if err := s.c.Nodes[1].Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	s.c.StopNode(1)
	if err := os.RemoveAll(filepath.Join(s.c.Configs[1].DataDir, "fsm")); err != nil {
		t.Fatal(err)
	}
	s.c.StartNode(1)
	s.c.StopNode(0)
	s.c.StartNode(0)
	if lv := s.c.Nodes[0].FSM().FeatureLevel(); lv != 2 {
		t.Fatalf("restarted box at level %d, want 2 at once from its files", lv)
	}
	waitLevel(2)
	traffic(0, 1, 2)
	s.c.AssertIdentical(30 * time.Second)

	// 6. A box rolled back after the raise cannot apply the new versions:
	// it halts ("upgrade this node") rather than diverge, and its status
	// says its build is below the store's level.
	newBuild[2].Store(false)
	s.c.StopNode(2)
	s.c.StartNode(2)
	deadline = time.Now().Add(30 * time.Second)
	for s.c.Nodes[2].FSM().Halted() == nil {
		if time.Now().After(deadline) {
			t.Fatal("an old build applied a new-version entry")
		}
		traffic(0)
	}
	if err := s.c.Nodes[2].FSM().Halted(); !strings.Contains(err.Error(), "upgrade this node") {
		t.Fatalf("rolled back box halted with %v", err)
	}
	if st := s.c.Nodes[2].Status(); st.BuildLevel != 1 || st.FeatureLevel != 2 {
		t.Fatalf("rolled back box's status: featureLevel %d buildLevel %d, want 2 and 1", st.FeatureLevel, st.BuildLevel)
	}
	// Updated again, it goes on from where it stopped.
	newBuild[2].Store(true)
	s.c.StopNode(2)
	s.c.StartNode(2)
	traffic(0, 1, 2)
	s.c.AssertIdentical(30 * time.Second)
	notHalted()
}

// reportsTrial: the leader's status shows box i in an update trial at
// build level 2.
func reportsTrial(s *store, i int) bool {
	_, l := s.c.WaitLeader(20 * time.Second)
	for _, m := range l.Status().Nodes {
		if m.ID == s.c.Configs[i].NodeID && m.Build != nil && m.Build.UpdatePending && m.Build.Level == 2 {
			return true
		}
	}
	return false
}
