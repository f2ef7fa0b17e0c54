package browsertest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/wallclock"
	"masterorder/orders"
	"masterorder/orders/orderstest"
)

// TestClockPrompt: three boxes back from a power cut with no internet,
// their clocks at the time they last knew (14 hours ago) and nothing to
// tell them better. The console asks "the boxes' clock says … — is that
// right?" with one button that sends the tablet's clock; the kitchen asks
// for a manager. One tap sets every box's clock and both prompts go.
// Screenshots at 390 and 1024 px, ja and en (docs/img/console-clock-*,
// kitchen-clock-*).
func TestClockPrompt(t *testing.T) {
	b := startBrowser(t)
	lastKnown := time.Now().Add(-14 * time.Hour)
	fakes := []*wallclock.Fake{wallclock.NewFake(lastKnown), wallclock.NewFake(lastKnown), wallclock.NewFake(lastKnown)}
	st := orderstest.StartBefore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Staff.KitchenPasswordHash = kitchenHash(t)
		c.Shop.Name = shopName
	}, func(i int) node.Options {
		o := orders.NodeOptions()
		o.WallClock, o.ClockSetter = fakes[i].Now, fakes[i]
		o.ClockSynced = func() bool { return false } // no NTP answers
		return o
	}, withUpdates(t), orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st.Cluster, svcs: st.Svcs, hc: apitest.Client(t, &http.Client{Timeout: 10 * time.Second})}
	li, _ := s.c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := s.svcs[li].SeedDemo(ctx); err != nil {
		t.Fatalf("seed the demo menu: %v", err)
	}

	con := b.open("console-clock", s.url(0)+"/staff/", phoneW, phoneH)
	// Whether the prompt was already drawn when the tabs appeared: drawn
	// after, it pushes the tabs down under a finger already tapping one.
	const watchTabs = `(() => { const app = document.querySelector('#app'); new MutationObserver(() => { if (!app.hidden && window.promptBeforeTabs === undefined) window.promptBeforeTabs = !document.querySelector('#clock-banner').hidden; }).observe(app, { attributes: true, attributeFilter: ['hidden'] }); return true; })()`
	con.eval(watchTabs)
	con.login()
	con.waitFor("the clock prompt", `!document.querySelector('#clock-banner').hidden && !!document.querySelector('#clock-set')`, 30*time.Second)
	ask := con.text("#clock-banner")
	if !strings.Contains(ask, "端末の時計は") || !strings.Contains(ask, "合っていますか") || !strings.Contains(ask, "このタブレットの時刻") {
		t.Fatalf("the prompt says %q", ask)
	}
	if !con.eval(`window.promptBeforeTabs === true`) {
		t.Error("the console drew the clock prompt after its tabs (the tabs jump down under a tapping finger)")
	}
	docShots(con, "console-clock", `!!document.querySelector('#clock-set')`)

	kt := b.open("kitchen-clock", s.url(1)+"/kitchen/", tabletW, tabletH)
	kt.eval(strings.ReplaceAll(watchTabs, "#app", "#board"))
	kt.loginAs(kitchenPassword)
	kt.waitFor("the kitchen asks for a manager", `!document.querySelector('#clock-banner').hidden && /店長に時計を合わせて/.test(document.querySelector('#clock-banner').textContent)`, 30*time.Second)
	if kt.visible("#clock-set") {
		t.Fatal("the kitchen screen offers to set the clock")
	}
	if !kt.eval(`window.promptBeforeTabs === true`) {
		t.Error("the kitchen drew the clock prompt after its board")
	}
	docShots(kt, "kitchen-clock", `!document.querySelector('#clock-banner').hidden`)

	// One tap.
	con.click("#clock-set")
	con.waitFor("the prompt gone", `document.querySelector('#clock-banner').hidden`, 30*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for i, f := range fakes {
		for f.Now().Sub(time.Now()).Abs() > 5*time.Second && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if d := f.Now().Sub(time.Now()).Abs(); d > 5*time.Second {
			t.Errorf("box %d's clock is %v off the tablet's after the tap", i, d)
		}
		if f.WentBack() {
			t.Errorf("box %d's clock went back", i)
		}
	}
	// The kitchen's banner goes at its next poll (20 s); reload to see it now.
	kt.eval(`(location.reload(), true)`)
	kt.waitFor("the kitchen without the prompt", `document.querySelector('#login').hidden && document.querySelector('#clock-banner').hidden`, 30*time.Second)
}
