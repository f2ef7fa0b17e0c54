package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/cloudsync/emulatortest"
)

const cloudProject = "demo-mo-browser"

// cloudOrder reports whether shops/{shop}/orders/{id} is in the
// emulator (read as its owner, past the rules).
func cloudOrder(t *testing.T, host, shop string, id int64) bool {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/shops/%s/orders/%d", host, cloudProject, shop, id), nil)
	req.Header.Set("Authorization", "Bearer owner")
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// pick sets the Cloud page's file input to path (what a tap on "choose
// file" and a pick in the tablet's files does).
func (tb *tab) pick(path string) {
	tb.t.Helper()
	tb.do(chromedp.SetUploadFiles(chromedp.CSS("#cloud-key-file"), []string{path}))
}

// shotsIn saves the tab at 390 and 1024 px as <name>-<lang>-<width>.png
// in the language the page shows now, scrolled to the top or, on a phone,
// to the element at (when not ""), and leaves it at phone width.
func shotsIn(tb *tab, name, ready, at string) {
	tb.t.Helper()
	lang := eval[string](tb, `document.documentElement.lang`)
	for _, w := range []struct {
		w, h int64
		tag  string
	}{{phoneW, phoneH, "390"}, {tabletW, tabletH, "1024"}} {
		tb.viewport(w.w, w.h)
		tb.waitFor(name+" ready", ready, 10*time.Second)
		tb.do(scrollTop())
		if at != "" && w.w == phoneW {
			tb.scrollBelowBars(at)
		}
		tb.screenshot(name + "-" + lang + "-" + w.tag)
	}
	tb.viewport(phoneW, phoneH)
}

// The Cloud page as an owner uses it, against the real Firestore emulator
// (its rules let only the sync@ account write), in Japanese and English:
// a picked file that is no key and a key without rights are refused with
// their words; the good key turns the sync on and an order reaches the
// cloud, the page saying when it last synced; switching off (confirmed)
// says off; with the internet gone a key is saved and the page says it
// waits for the internet. Screenshots of each state at 390 and 1024 px
// (docs/img/console-cloud-*).
func TestCloudPage(t *testing.T) {
	emu := emulatortest.NewWithRules(t, emulatortest.WritersRules("sync@"))
	b := startBrowser(t)
	s := startStoreWith(t, func(c *orders.FileConfig) {
		c.Firestore.EmulatorHost = emu.HostPort()
		c.Firestore.MaxBackoff = node.Duration{Duration: 500 * time.Millisecond}
	})
	n := s.leader()
	shop := s.c.Configs[0].ShopID
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	menu := file("menu.csv", []byte("name,price\nramen,900\n"))
	noRights := file("other-project-key.json", emulatortest.ServiceAccountKey(t, cloudProject, "reader@"+cloudProject+".iam.gserviceaccount.com"))
	good := file(cloudProject+"-firebase-adminsdk.json", emulatortest.ServiceAccountKey(t, cloudProject, "sync@"+cloudProject+".iam.gserviceaccount.com"))

	// The page comes from a follower: the key travels to every box.
	st := b.open("staff-cloud", s.url((n+1)%3)+"/staff/#cloud", phoneW, phoneH)
	st.login()
	st.waitFor("the cloud page, off", `document.querySelector('#page-cloud').dataset.state === 'off'`, 15*time.Second)
	if got := st.text("#tab-cloud"); got != "クラウド" {
		t.Fatalf("tab %q", got)
	}

	for round, lang := range []string{"ja", "en"} {
		en := lang == "en"
		if eval[string](st, `document.documentElement.lang`) != lang {
			st.click("#lang-toggle")
			st.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		want := map[bool]string{false: "オフ：注文はクラウドに送っていません。", true: "Off: orders are not sent to the cloud."}[en]
		st.waitFor("off in words", fmt.Sprintf(`document.querySelector('#cloud-state').textContent === %q`, want), 10*time.Second)
		shotsIn(st, "console-cloud-off", `!!document.querySelector('#cloud-form')`, "")

		// A file that is no key, then a key without Firestore rights.
		for _, bad := range []struct{ path, code string }{{menu, "CLOUD_KEY_NOT_JSON"}, {noRights, "CLOUD_KEY_NO_ACCESS"}} {
			st.pick(bad.path)
			st.click("#cloud-save")
			msg := httpapi.Message(bad.code, en)
			st.waitFor(bad.code+" in words, the specifics folded", fmt.Sprintf(`(() => {
				const e = document.querySelector('#cloud-form-error'), d = document.querySelector('#cloud-form-details');
				return !e.hidden && e.dataset.reason === %q && e.textContent === %q && !d.hidden && !d.open && d.textContent.length > 20;
			})()`, bad.code, msg), 30*time.Second)
		}
		shotsIn(st, "console-cloud-refused", `!document.querySelector('#cloud-form-error').hidden`, "#cloud-file-label")
		if st.eval(`document.querySelector('#page-cloud').dataset.state !== 'off'`) {
			t.Fatal("a refused key changed the state")
		}

		// The good key: on, and an order reaches the cloud.
		st.pick(good)
		st.click("#cloud-save")
		st.waitFor("saved and checked", `document.querySelector('#cloud-form-result').dataset.checked === 'written' && !document.querySelector('#cloud-form-result').hidden`, 30*time.Second)
		if v := eval[string](st, `document.querySelector('#cloud-key-file').value`); v != "" {
			t.Fatalf("the file input still holds %q after the save", v)
		}
		sess := s.openSession(n, fmt.Sprintf("C%d", round+1))
		id := s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "shoyu", Quantity: 1, Toppings: []string{}}}, 10*time.Second)
		deadline := time.Now().Add(30 * time.Second)
		for !cloudOrder(t, emu.HostPort(), shop, id) {
			if time.Now().After(deadline) {
				t.Fatalf("order %d not in Firestore within 30 s", id)
			}
			time.Sleep(100 * time.Millisecond)
		}
		lastSync := map[bool]string{false: "最後の同期：", true: "Last synced at "}[en]
		st.waitFor("on, with the last sync", fmt.Sprintf(`document.querySelector('#page-cloud').dataset.state === 'on' && document.querySelector('#cloud-more').textContent.startsWith(%q)`, lastSync), 30*time.Second)
		for _, sel := range []string{"#cloud-off", "#cloud-facts"} {
			if !st.visible(sel) {
				t.Fatalf("%s not shown while on", sel)
			}
		}
		if facts := st.text("#cloud-facts"); !strings.Contains(facts, "sync@"+cloudProject) || strings.Contains(facts, "PRIVATE") {
			t.Fatalf("facts %q", facts)
		}
		shotsIn(st, "console-cloud-on", `document.querySelector('#page-cloud').dataset.state === 'on'`, "")

		// Off, confirmed.
		st.click("#cloud-off")
		st.waitVisible(`#confirm-dialog[data-kind="cloud-off"]`)
		st.click("#confirm-ok")
		st.waitFor("off again", `document.querySelector('#page-cloud').dataset.state === 'off' && document.querySelector('#cloud-off').hidden`, 15*time.Second)
		st.waitFor("the toast gone", `document.querySelector('#toast').hidden`, 10*time.Second)
	}

	// No internet: the key is saved and the page says it waits.
	emu.Stop()
	st.pick(good)
	st.click("#cloud-save")
	st.waitFor("saved unconfirmed", `document.querySelector('#cloud-form-result').dataset.checked === 'unconfirmed'`, 45*time.Second)
	for _, lang := range []string{"en", "ja"} {
		if eval[string](st, `document.documentElement.lang`) != lang {
			st.click("#lang-toggle")
			st.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		want := map[string]string{"ja": "インターネットを待っています。", "en": "Waiting for the internet."}[lang]
		result := map[string]string{"ja": "鍵を保存しました。いまはインターネットに", "en": "Key saved. The shop is not online right now"}[lang]
		st.waitFor("waiting in words, the save's words in the same language", fmt.Sprintf(`document.querySelector('#page-cloud').dataset.state === 'waiting' &&
			document.querySelector('#cloud-state').textContent.startsWith(%q) && document.querySelector('#cloud-form-result').textContent.startsWith(%q)`, want, result), 30*time.Second)
		shotsIn(st, "console-cloud-waiting", `document.querySelector('#page-cloud').dataset.state === 'waiting'`, "")
	}
	var v struct{ State, Source string }
	json.Unmarshal(s.staff(n, "GET", "/api/staff/cloud", nil).body, &v)
	if v.State != "waiting" || v.Source != "console" {
		t.Fatalf("the leader's view: %+v", v)
	}
}
