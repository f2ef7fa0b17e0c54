package orders_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/wallclock"
	"masterorder/orders"
	"masterorder/orders/printing/printertest"
)

// imageEpoch is where a box without a real-time clock starts after a
// power cut: the date its image was built (plausible: after 2025).
var imageEpoch = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// clockRig is three boxes whose wall clocks are fakes the boxes set
// (as clock_settime would), with no NTP, and the real time ("truth")
// running ahead of the test's clock by whatever the store spent dark.
type clockRig struct {
	mu     sync.Mutex
	fakes  []*wallclock.Fake
	boot   []string
	synced []atomic.Bool
	dark   atomic.Int64 // how long the store was powered off, in all
}

func newClockRig(n int, at time.Time) *clockRig {
	r := &clockRig{synced: make([]atomic.Bool, n)}
	for i := 0; i < n; i++ {
		r.fakes = append(r.fakes, wallclock.NewFake(at))
		r.boot = append(r.boot, "boot-1")
	}
	return r
}

func (r *clockRig) truth() time.Time { return time.Now().Add(time.Duration(r.dark.Load())) }

func (r *clockRig) options(i int) node.Options {
	o := orders.NodeOptions()
	r.mu.Lock()
	f, boot := r.fakes[i], r.boot[i]
	r.mu.Unlock()
	o.WallClock, o.ClockSetter, o.BootID = f.Now, f, boot
	o.ClockSynced = r.synced[i].Load
	return o
}

// powerCut plays a cut of box i: a new boot, its clock back at the image's
// date.
func (r *clockRig) powerCut(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fakes[i].Jump(imageEpoch)
	r.boot[i] = fmt.Sprintf("boot-after-cut-%d", time.Now().UnixNano())
}

type clockView struct {
	Source         string
	Trusted        bool
	Wall           int64
	ClusterTrusted bool
	ClusterWall    int64
}

func (s *store) clock(i int) (clk clockView, suspect bool) {
	s.t.Helper()
	var st struct {
		ClockSuspect bool
		Clock        clockView
	}
	s.mustStaff(i, "GET", "/api/cluster/status", nil).json(s.t, &st)
	return st.Clock, st.ClockSuspect
}

func near(a, b time.Time, d time.Duration) bool { return a.Sub(b) < d && b.Sub(a) < d }

// Three boxes powered up after a cut, their clocks at the image's date and
// no NTP: each moves forward to the last time it knew (never earlier),
// nothing calls the time right and the console asks; one manager's tap
// sets every box's clock; a receipt and the reports then carry the right
// date, and a token issued before the dark night no longer works. No
// clock ever went back.
func TestClockAfterAPowerCut(t *testing.T) {
	rig := newClockRig(3, time.Now())
	s := startStoreWith(t, 3, nil, rig.options)
	s.seedMenu()
	p := printertest.Start(t)
	s.mustStaff(0, "PUT", "/api/staff/printers/till", map[string]any{"addr": p.Addr, "stations": []string{}, "receipts": true, "name": "レジ"})

	// A new store: nobody gave the time yet.
	if clk, suspect := s.clock(1); clk.ClusterTrusted || clk.Trusted || clk.Source != "unknown" || !suspect {
		t.Fatalf("a new store without NTP: %+v suspect %v", clk, suspect)
	}
	// The manager taps: every box's clock is set.
	if r := s.staff(2, "POST", "/api/staff/clock", map[string]int64{"time": rig.truth().UnixMilli()}); r.Status != 200 {
		t.Fatalf("set clock: %d %s", r.Status, r.Body)
	}
	waitFor(t, "every box trusts its clock", 20*time.Second, func() bool {
		for i := range s.c.Nodes {
			if clk, _ := s.clock(i); !clk.Trusted || clk.Source != "manager" {
				return false
			}
		}
		return true
	})
	oldToken := s.login(2) // stamped with the (now trusted) cluster time
	sess := s.openSession("T1")
	s.staffOrder(t, 0, sess, cart(line("tea", 1)))
	time.Sleep(1500 * time.Millisecond) // one clock tick: the last known time is saved at stop anyway
	var before time.Time
	for _, f := range rig.fakes {
		if now := f.Now(); now.After(before) {
			before = now
		}
	}

	// The breaker trips: all three are off for 13 hours (longer than a
	// token lives) and come back at the image's date, with no internet.
	s.c.StopAll()
	rig.dark.Add(int64(13 * time.Hour))
	for i := range s.c.Nodes {
		rig.powerCut(i)
	}
	for i := range s.c.Nodes {
		s.c.StartNode(i)
	}
	s.c.WaitLeader(20 * time.Second)
	s.token = s.login(1)
	for i, f := range rig.fakes {
		if f.Now().Before(before.Add(-wallclock.Slack)) {
			t.Errorf("box %d came back at %v, earlier than it last knew (%v)", i, f.Now(), before)
		}
	}
	for i := range s.c.Nodes {
		clk, suspect := s.clock(i)
		if clk.Trusted || clk.ClusterTrusted || !suspect {
			t.Errorf("box %d after the cut: %+v (the last known time is not the real time)", i, clk)
		}
		if time.UnixMilli(clk.ClusterWall).Before(before.Add(-wallclock.Slack)) {
			t.Errorf("box %d goes by %v, earlier than the store last knew (%v)", i, time.UnixMilli(clk.ClusterWall), before)
		}
	}

	// The console asks; the manager taps from the tablet.
	var after clockView
	s.mustStaff(0, "POST", "/api/staff/clock", map[string]int64{"time": rig.truth().UnixMilli()}).json(t, &after)
	if !after.Trusted || after.Source != "manager" || !near(time.UnixMilli(after.Wall), rig.truth(), 5*time.Second) {
		t.Errorf("the box that took the tap: %+v, truth %v", after, rig.truth())
	}
	waitFor(t, "every box on the manager's time", 20*time.Second, func() bool {
		for i, f := range rig.fakes {
			if clk, _ := s.clock(i); !clk.Trusted || !clk.ClusterTrusted || !near(f.Now(), rig.truth(), 5*time.Second) {
				return false
			}
		}
		return true
	})

	// A token issued before the dark night outlived its 12 hours.
	if r := s.do(2, "GET", "/api/staff/sessions", map[string]string{"Authorization": "Bearer " + oldToken}, nil); r.Status != 401 {
		t.Errorf("a token from before 13 dark hours: %d, want 401", r.Status)
	}

	// A receipt carries the right date.
	truth := rig.truth()
	s.staffOrder(t, 1, sess, cart(line("tea", 2)))
	s.mustStaff(2, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", map[string]string{"payment": "cash"})
	var receipt []string
	waitFor(t, "the receipt", 30*time.Second, func() bool {
		_, _, all := p.Tickets()
		if len(all) > 0 {
			receipt = all[0].Lines
			return true
		}
		return false
	})
	dated := false
	for _, l := range receipt {
		for _, d := range []string{truth.Local().Format("2006-01-02"), truth.UTC().Format("2006-01-02")} {
			if strings.HasPrefix(l, d) {
				dated = true
			}
		}
	}
	if !dated {
		t.Errorf("the receipt is not dated %s: %q", truth.Format("2006-01-02"), receipt)
	}
	// The reports' today is the real business day, on every box.
	for i := range s.c.Nodes {
		var rep struct {
			From  string
			Total int64
		}
		s.mustStaff(i, "GET", "/api/staff/reports/sales", nil).json(t, &rep)
		if want := orders.BusinessDate(rig.truth(), time.Local); rep.From != want {
			t.Errorf("box %d: the report's day is %s, want %s", i, rep.From, want)
		}
	}
	for i, f := range rig.fakes {
		if f.WentBack() {
			t.Errorf("box %d's clock went back", i)
		}
	}
}

// A box that just booted at its image's date, which cannot even set its
// clock, issues a token: the other boxes, whose clocks are right, take it
// (its lifetime is judged on the cluster's time, not that box's clock).
// Its clock moves forward to the cluster's stamp when it can.
func TestTokenFromABoxThatJustBooted(t *testing.T) {
	rig := newClockRig(3, time.Now())
	for i := range rig.synced {
		rig.synced[i].Store(true) // NTP on every box
	}
	s := startStoreWith(t, 3, nil, rig.options)
	s.seedMenu()
	s.openSession("T1") // a stamp in the log
	// Box 0 reboots without NTP, at the image's date, and cannot set its
	// clock (no CAP_SYS_TIME).
	s.c.StopNode(0)
	rig.powerCut(0)
	rig.synced[0].Store(false)
	stuck := wallclock.NewFake(imageEpoch)
	s.c.Options = func(i int) node.Options {
		o := rig.options(i)
		if i == 0 {
			o.WallClock, o.ClockSetter = stuck.Now, nil
		}
		return o
	}
	s.c.StartNode(0)
	// Caught up, and knowing that a member's clock is trusted: the token
	// then carries a wall stamp (otherwise it would carry none and prove
	// nothing).
	waitFor(t, "box 0 caught up", 20*time.Second, func() bool {
		clk, _ := s.clock(0)
		return time.UnixMilli(clk.ClusterWall).After(time.Now().Add(-time.Minute)) && clk.ClusterTrusted
	})
	token := s.login(0)
	for i := range s.c.Nodes {
		if r := s.do(i, "GET", "/api/staff/sessions", map[string]string{"Authorization": "Bearer " + token}, nil); r.Status != 200 {
			t.Errorf("a token from the box that just booted, on box %d: %d %s", i, r.Status, r.Body)
		}
	}
	// It trusts a member's clock, but its own could not follow.
	if clk, _ := s.clock(0); clk.Trusted || !clk.ClusterTrusted {
		t.Errorf("box 0 (clock stuck at the image's date): %+v", clk)
	}
	if stuck.Now().After(imageEpoch.Add(time.Hour)) {
		t.Error("a clock without a setter moved")
	}

	// With a setter it moves forward to a trusted member's time.
	s.c.StopNode(0)
	rig.powerCut(0)
	s.c.Options = rig.options
	s.c.StartNode(0)
	waitFor(t, "box 0 on the cluster's time", 20*time.Second, func() bool {
		clk, _ := s.clock(0)
		return clk.Trusted && clk.Source == "cluster" && near(rig.fakes[0].Now(), time.Now(), 5*time.Second)
	})
	if rig.fakes[0].WentBack() {
		t.Error("box 0's clock went back")
	}
}

// A manager's time far behind the boxes' is refused (a clock never goes
// back); a little behind confirms their time; a kitchen login cannot set
// it; a time before 2025 is refused.
func TestManagerClockRefusals(t *testing.T) {
	rig := newClockRig(3, time.Now())
	s := startStoreWith(t, 3, nil, rig.options)
	if r := s.staff(0, "POST", "/api/staff/clock", map[string]int64{"time": time.Now().Add(-time.Hour).UnixMilli()}); r.Status != 409 || r.reason(t) != "CLOCK_BEHIND" {
		t.Errorf("an hour behind: %d %s", r.Status, r.Body)
	}
	if r := s.staff(0, "POST", "/api/staff/clock", map[string]int64{"time": imageEpoch.AddDate(-1, 0, 0).UnixMilli()}); r.Status != 400 || r.reason(t) != "CLOCK_IMPLAUSIBLE" {
		t.Errorf("before 2025: %d %s", r.Status, r.Body)
	}
	if r := s.staff(0, "POST", "/api/staff/clock", map[string]any{}); r.Status != 400 {
		t.Errorf("no time: %d %s", r.Status, r.Body)
	}
	var clk clockView
	s.mustStaff(1, "POST", "/api/staff/clock", map[string]int64{"time": time.Now().Add(-time.Minute).UnixMilli()}).json(t, &clk)
	if !clk.Trusted || clk.Source != "manager" {
		t.Errorf("a minute behind confirms: %+v", clk)
	}
	for i, f := range rig.fakes {
		if f.WentBack() || f.Sets() > 0 {
			t.Errorf("box %d: a confirmation moved its clock (%d sets, back %v)", i, f.Sets(), f.WentBack())
		}
	}
	// The audit holds the tap.
	r := s.mustStaff(0, "GET", "/api/staff/audit", nil)
	if !strings.Contains(string(r.Body), "CLOCK_SET") {
		t.Errorf("no CLOCK_SET in the audit: %s", r.Body)
	}
}
