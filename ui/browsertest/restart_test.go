package browsertest

import (
	"strings"
	"testing"
	"time"

	"masterorder/node/restart"
)

// TestBoxesLastRestart: the Boxes page says why a box last started, in
// words, from what the boxes report (no fixture). Box b's run ends as
// systemd ends a process its watchdog caught (its ExecStopPost,
// `masterorder stopped`, records SERVICE_RESULT=watchdog), box c is
// restarted cleanly, box a never restarted. b's line is a warning, c's is
// muted, a has none; systemd's words are under "details". Screenshots at
// 390 and 1024 px, ja and en (console-boxes-restart-*).
func TestBoxesLastRestart(t *testing.T) {
	// As under the unit: each run is marked with systemd's invocation id,
	// which ExecStopPost's record must match.
	const invocation = "0123456789abcdef0123456789abcdef"
	t.Setenv("INVOCATION_ID", invocation)
	b := startBrowser(t)
	s := startStore(t)
	const n = 0 // the pages come from box a

	st := b.open("staff-restart", s.url(n)+"/staff/#cluster", phoneW, phoneH)
	st.login()
	st.waitFor("3 of 3 boxes working", `document.querySelector('#health-summary').dataset.working === '3'`, 15*time.Second)
	if st.eval(`!!document.querySelector('#health-boxes [data-restart]')`) {
		t.Fatal("a last restart shown after every box's first start")
	}

	// Box b: stopped answering; systemd aborted it, then killed it, and its
	// ExecStopPost recorded the unit's result.
	s.c.StopNode(1)
	unit := map[string]string{"INVOCATION_ID": invocation, "SERVICE_RESULT": "watchdog", "EXIT_CODE": "killed", "EXIT_STATUS": "KILL"}
	if err := restart.RecordSystemdStop(s.c.Configs[1].DataDir, time.Now(), func(k string) string { return unit[k] }); err != nil {
		t.Fatal(err)
	}
	s.c.StartNode(1)
	// Box c: a clean restart.
	s.c.StopNode(2)
	s.c.StartNode(2)
	for i := range s.c.Nodes {
		s.waitReady(i)
	}

	st.waitFor("b's and c's last restarts", `(() => {
		const b = document.querySelector('#health-boxes [data-box-id="b"] [data-restart]');
		const c = document.querySelector('#health-boxes [data-box-id="c"] [data-restart]');
		return !!b && !!c && document.querySelector('#health-summary').dataset.working === '3';
	})()`, 30*time.Second)
	if got := st.text(`#health-boxes [data-box-id="b"] [data-restart]`); !strings.HasSuffix(got, "に自動で再起動しました（応答しなくなったため）") {
		t.Fatalf("box b (ja): %q", got)
	}
	if got := st.text(`#health-boxes [data-box-id="c"] [data-restart]`); !strings.Contains(got, "通常の再起動") {
		t.Fatalf("box c (ja): %q", got)
	}
	if !st.eval(`document.querySelector('#health-boxes [data-box-id="b"] [data-restart]').classList.contains('health-warn')`) ||
		!st.eval(`document.querySelector('#health-boxes [data-box-id="c"] [data-restart]').classList.contains('muted')`) {
		t.Fatal("b's watchdog restart is not a warning, or c's clean one not muted")
	}
	if st.eval(`!!document.querySelector('#health-boxes [data-box-id="a"] [data-restart]')`) {
		t.Fatal("box a never restarted, yet a line")
	}
	docShots(st, "console-boxes-restart", `!!document.querySelector('#health-boxes [data-box-id="b"] [data-restart]')`)

	st.click("#lang-toggle")
	st.waitFor("English words", `/^Restarted itself at \d\d:\d\d after it stopped answering$/.test(document.querySelector('#health-boxes [data-box-id="b"] [data-restart]').textContent)`, 10*time.Second)
	st.click("#cluster-details summary")
	st.waitFor("systemd's words under details", `/watchdog; watchdog killed KILL/.test(document.querySelector('#cluster-nodes tr[data-node-id="b"]').textContent)`, 10*time.Second)
	st.viewport(tabletW, tabletH)
	st.eval(`(document.querySelector('#cluster-nodes').scrollIntoView({ block: 'center' }), true)`)
	st.screenshot("staff-boxes-restart-details-tablet-en")
}
