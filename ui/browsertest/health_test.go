package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"masterorder/httpapi"
)

// statusFixtureJS wraps the page's fetch so GET /api/cluster/status
// answers what the box said, changed by window.__statusFixture(st) when
// one is set: how the tests show states a real cluster would take
// minutes (a box silent for 7 minutes) or another branch (a memory card's
// state, nodes[].disk) to produce.
const statusFixtureJS = `(() => {
	if (window.__fixtureInstalled) return true;
	window.__fixtureInstalled = true;
	const real = window.fetch.bind(window);
	window.fetch = async (url, init) => {
		const res = await real(url, init);
		if (!String(url).includes('/api/cluster/status') || !window.__statusFixture || !res.ok) return res;
		const st = await res.clone().json();
		window.__statusFixture(st);
		return new Response(JSON.stringify(st), { status: res.status, headers: res.headers });
	};
	return true;
})()`

// fixtureSevenMinutesAndCards: box c silent for seven minutes (by its
// downSince), box b's card full, the answering box's card low.
const fixtureSevenMinutesAndCards = `(window.__statusFixture = (st) => {
	for (const n of st.nodes || []) {
		if (n.id === 'c' && !n.reachable) n.downSince = new Date(Date.now() - 7 * 60 * 1000).toISOString();
		if (n.id === 'b') n.disk = { state: 'full', freeBytes: 0, totalBytes: 31914983424, since: new Date().toISOString() };
	}
	// The answering box reports its own card on its nodes[] entry too.
	st.disk = { state: 'low', freeBytes: 812000000, totalBytes: 31914983424, since: new Date().toISOString() };
	for (const n of st.nodes || []) if (n.id === st.nodeId) n.disk = st.disk;
}, true)`

// docShots saves the tab at 390 and 1024 px in ja and en as
// <name>-<lang>-<width>.png (the owner's guide uses them from docs/img/),
// and leaves the tab in Japanese at phone width.
func docShots(tb *tab, name string, ready string) {
	tb.t.Helper()
	docShotsBelow(tb, name, ready, "")
}

// docShotsBelow is docShots with the element sel scrolled to just below
// the sticky bars ("" : the top of the page).
func docShotsBelow(tb *tab, name, ready, sel string) {
	tb.t.Helper()
	for _, lang := range []string{"ja", "en"} {
		if eval[string](tb, `document.documentElement.lang`) != lang {
			tb.click("#lang-toggle")
			tb.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		for _, w := range []struct {
			w, h int64
			tag  string
		}{{phoneW, phoneH, "390"}, {tabletW, tabletH, "1024"}} {
			tb.viewport(w.w, w.h)
			if ready != "" {
				tb.waitFor(name+" ready", ready, 10*time.Second)
			}
			tb.do(scrollTop())
			if sel != "" {
				tb.scrollBelowBars(sel)
			}
			tb.screenshot(name + "-" + lang + "-" + w.tag)
		}
	}
	tb.click("#lang-toggle")
	tb.waitFor("the page in ja", `document.documentElement.lang === 'ja'`, 5*time.Second)
	tb.viewport(phoneW, phoneH)
}

// TestOwnerHealthView is the owner's Boxes page and the banners: three
// boxes working says so in plain words with the Raft figures folded away;
// box c switched off is "not answered since hh:mm" with what to do and a
// replace button; after five minutes (the fixture moves downSince back)
// the console and the kitchen show a banner; a memory card in trouble
// (nodes[].disk, fixture) is named in words on the page and the banner.
// Screenshots at 390 and 1024 px, ja and en.
func TestOwnerHealthView(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	// The pages come from box a; box c (index 2) is the one switched off.
	const n = 0

	st := b.open("staff-boxes", s.url(n)+"/staff/#cluster", phoneW, phoneH)
	st.login()
	st.waitFor("3 of 3 boxes working", `document.querySelector('#health-summary').dataset.working === '3'`, 15*time.Second)
	if got := st.text("#health-summary"); got != "3 台中 3 台が動いています" {
		t.Fatalf("summary %q", got)
	}
	if st.eval(`document.querySelector('#cluster-details').open`) {
		t.Fatal("the Raft details are open by default")
	}
	if st.visible("#health-banner") {
		t.Fatal("a banner with every box working")
	}
	st.screenshot("staff-boxes-ok-phone-ja")
	docShots(st, "console-boxes-ok", "")

	// Box c goes off (when it led, a and b elect a new leader).
	s.c.StopNode(2)
	st.waitFor("box c not answering", `(() => {
		const p = document.querySelector('#health-problems [data-problem="down"][data-box-id="c"]');
		return p && /から応答していません/.test(p.textContent);
	})()`, 20*time.Second)
	if got := st.text("#health-summary"); got != "3 台中 2 台が動いています" {
		t.Fatalf("summary with c off: %q", got)
	}
	if !st.visible(`#health-problems [data-replace="c"]`) {
		t.Fatal("no replace button for box c")
	}
	if st.visible("#health-banner") {
		t.Fatal("a banner before five minutes")
	}
	st.click(`#health-problems [data-problem="down"] summary`)
	st.screenshot("staff-boxes-down-phone-ja")
	docShots(st, "console-boxes-down", `!!document.querySelector('#health-problems [data-problem="down"]')`)

	// English, tablet width.
	st.click("#lang-toggle")
	st.viewport(tabletW, tabletH)
	st.waitFor("English words", `/^Box c has not answered since \d\d:\d\d$/.test(document.querySelector('#health-problems [data-problem="down"] p').textContent)`, 10*time.Second)
	if got := st.text("#health-summary"); got != "2 of 3 boxes working" {
		t.Fatalf("summary in English: %q", got)
	}
	st.screenshot("staff-boxes-down-tablet-en")

	// Seven minutes later, and memory cards in trouble (fixture).
	st.eval(statusFixtureJS)
	st.eval(fixtureSevenMinutesAndCards)
	st.waitFor("the banner", `!document.querySelector('#health-banner').hidden`, 10*time.Second)
	banner := st.text("#health-banner")
	for _, want := range []string{"Box c has not answered since", "Box b’s memory card is full", "See “Boxes” in the staff console"} {
		if !strings.Contains(banner, want) {
			t.Fatalf("banner %q lacks %q", banner, want)
		}
	}
	st.waitFor("box b's card on the page", `!!document.querySelector('#health-problems [data-problem="disk-full"][data-box-id="b"]')`, 5*time.Second)
	st.waitFor("this box's card low on the page", `!!document.querySelector('#health-problems [data-problem="disk-low"]')`, 5*time.Second)
	if got := st.text("#health-summary"); got != "1 of 3 boxes working" {
		t.Fatalf("summary with c off and b's card full: %q", got)
	}
	st.screenshot("staff-boxes-cards-tablet-en")
	st.click("#lang-toggle")
	st.viewport(phoneW, phoneH)
	st.waitFor("Japanese words", `/メモリーカードがいっぱいです/.test(document.querySelector('#health-banner').textContent)`, 5*time.Second)
	st.screenshot("staff-boxes-cards-phone-ja")
	docShots(st, "console-boxes-cards", `!document.querySelector('#health-banner').hidden`)
	st.click("#cluster-details summary")
	st.waitVisible("#cluster-nodes tr[data-node-id]")
	st.screenshot("staff-boxes-details-phone-ja")

	// The kitchen, on the same box: the banner tells the cooks to tell
	// the manager.
	kt := b.open("kitchen-health", s.url(n)+"/kitchen/", tabletW, tabletH)
	kt.eval(statusFixtureJS)
	kt.eval(fixtureSevenMinutesAndCards)
	kt.login()
	kt.waitFor("the kitchen banner", `/店長に知らせてください/.test(document.querySelector('#health-banner').textContent) && !document.querySelector('#health-banner').hidden`, 15*time.Second)
	if got := kt.text("#health-banner"); !strings.Contains(got, "端末 c が") || !strings.Contains(got, "端末 b のメモリーカードがいっぱいです") {
		t.Fatalf("kitchen banner %q", got)
	}
	kt.screenshot("kitchen-health-banner-tablet-ja")
}

// A console join that failed shows its reason in words (the progress's
// message, which a member words per Accept-Language: TestConsoleJoinProgressInWords),
// not a code or the English detail. The in-process store mounts no
// console join, so the page's fetch answers the failed progress a member
// gives (fixture); the cluster tab is entered again to ask for it.
func TestConsoleJoinFailureInWords(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	st := b.open("staff-join-failed", s.url(0)+"/staff/#cluster", phoneW, phoneH)
	st.login()
	st.waitFor("the Boxes page", `document.querySelector('#health-summary').dataset.working === '3'`, 15*time.Second)
	ja, en := httpapi.Message("NO_CA_KEY", false), httpapi.Message("NO_CA_KEY", true)
	st.eval(fmt.Sprintf(`(() => {
		const real = window.fetch.bind(window);
		window.fetch = async (url, init) => {
			if (!String(url).includes('/api/staff/cluster/join')) return real(url, init);
			const message = document.documentElement.lang === 'en' ? %q : %q;
			return new Response(JSON.stringify({ state: 'failed', boxId: 'f00d', shortCode: 'F00D', hostname: 'masterorder-f00d',
				error: 'NO_CA_KEY', detail: 'pki: read /etc/masterorder/tls/ca-key.pem: no such file or directory', message }),
				{ status: 200, headers: { 'Content-Type': 'application/json' } });
		};
		return true;
	})()`, en, ja))
	st.eval(`(location.hash = '#tables', true)`)
	st.eval(`(location.hash = '#cluster', true)`)
	shown := func(msg string) string {
		return fmt.Sprintf(`(() => { const p = document.querySelector('#join-progress');
			return !!p && !p.hidden && p.dataset.state === 'failed' && p.textContent.includes(%q) && !p.textContent.includes('pki:'); })()`, msg)
	}
	st.waitFor("the failed join in words", shown(ja), 15*time.Second)
	st.screenshot("staff-join-failed-phone-ja")
	st.click("#lang-toggle")
	st.viewport(tabletW, tabletH)
	st.eval(`(location.hash = '#tables', true)`)
	st.eval(`(location.hash = '#cluster', true)`)
	st.waitFor("the failed join in English", shown(en), 15*time.Second)
	st.screenshot("staff-join-failed-tablet-en")
}
