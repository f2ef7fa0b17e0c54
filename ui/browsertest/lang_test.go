package browsertest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The staff and kitchen screens start in the browser's language (Japanese
// for a Japanese browser, English for any other), the page title follows
// the language, and an error the page showed before a switch is worded
// again in the new language.
func TestStaffAndKitchenInTheBrowsersLanguage(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	for _, c := range []struct{ languages, want string }{{"en-US,en", "en"}, {"fr-FR,fr", "en"}, {"ja-JP,ja", "ja"}} {
		st := b.openWithLanguages("staff-"+c.languages, s.url(0)+"/staff/", phoneW, phoneH, c.languages)
		st.waitVisible("#login-form")
		if got := eval[string](st, `document.documentElement.lang`); got != c.want {
			t.Errorf("%s browser: the staff screen starts in %q, want %q", c.languages, got, c.want)
		}
		k := b.openWithLanguages("kitchen-"+c.languages, s.url(1)+"/kitchen/", tabletW, tabletH, c.languages)
		k.waitVisible("#login-form")
		if got := eval[string](k, `document.documentElement.lang + ' | ' + document.title`); got != map[string]string{"en": "en | MasterOrder — Kitchen screen", "ja": "ja | MasterOrder — キッチン画面"}[c.want] {
			t.Errorf("%s browser: the kitchen screen starts as %q", c.languages, got)
		}
	}

	// English, then the kitchen password on the console: the page's own
	// words, worded again after switching to Japanese (the title too).
	st := b.openWithLanguages("staff-switch", s.url(0)+"/staff/", phoneW, phoneH, "en-US,en")
	st.waitVisible("#login-form")
	if got := eval[string](st, `document.title + ' | ' + document.querySelector('#login-submit').textContent + ' | ' + document.querySelector('#kitchen-link').textContent`); got != "MasterOrder — Staff screen | Log in | Kitchen screen" {
		t.Errorf("the English staff screen: %q", got)
	}
	st.typeInto("#login-password", kitchenPassword)
	st.click("#login-submit")
	st.waitFor("the kitchen-role message", `(() => { const e = document.querySelector('#login-error'); return !e.hidden && e.textContent.includes('/kitchen/'); })()`, 10*time.Second)
	if got := st.text("#login-error"); !strings.HasPrefix(got, "This is the kitchen password") {
		t.Errorf("the kitchen-role message in English: %q", got)
	}
	st.click("#lang-toggle")
	if got := eval[string](st, `document.title + ' | ' + document.querySelector('#login-error').textContent`); !strings.HasPrefix(got, "MasterOrder — スタッフ画面 | これはキッチン用のパスワードです。") {
		t.Errorf("after switching to Japanese: %q", got)
	}
}

// The shop's name ([shop] name, the setup wizard's) is on the staff
// screen's header and, once the PIN is in, on the guest page's. The
// console takes it from the status its banners' first poll fetched: one
// staff status request at login, not two.
func TestShopNameOnTheHeaders(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	st := b.open("staff", s.url(0)+"/staff/", phoneW, phoneH)
	// Counts the staff view's status requests (those with a token) until
	// the shop's name is drawn; the banners poll again only 20 s later.
	st.eval(`(() => {
		window.staffStatusCalls = 0;
		const orig = window.fetch;
		window.fetch = function (input, init) {
			const url = typeof input === 'string' ? input : input.url;
			const h = (init && init.headers) || {};
			if (url.includes('/api/cluster/status') && Object.keys(h).some((k) => k.toLowerCase() === 'authorization')) window.staffStatusCalls++;
			return orig.apply(this, arguments);
		};
		const label = document.querySelector('#shop-label');
		new MutationObserver(() => {
			if (label.textContent && window.staffStatusCallsAtName === undefined) window.staffStatusCallsAtName = window.staffStatusCalls;
		}).observe(label, { childList: true, characterData: true, subtree: true });
		return true;
	})()`)
	st.login()
	st.waitFor("the shop's name on the staff header", `document.querySelector('.topbar #shop-label').textContent === `+jsString(shopName)+` && !document.querySelector('#shop-label').hidden`, 10*time.Second)
	if n := eval[int](st, `window.staffStatusCallsAtName`); n != 1 {
		t.Errorf("the console asked for the staff status %d times before drawing the shop's name, want 1 (the banners' poll)", n)
	}
	sess := s.openSession(0, "N1")
	g := b.open("guest", s.url(1)+"/guest/?s="+sess.SessionID, phoneW, phoneH)
	g.waitVisible("#pin-input")
	g.typeInto("#pin-input", sess.PIN)
	g.click("#pin-submit")
	g.waitFor("the shop's name on the guest header", `document.querySelector('.topbar .brand').textContent === `+jsString(shopName)+` && document.title === `+jsString(shopName), 10*time.Second)
	// The guest's menu under the shop's name, ja and en, 390 and 1024 px.
	for _, lang := range []string{"ja", "en"} {
		chooseLang(g, lang)
		g.waitFor("the menu in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		for _, d := range []struct {
			w, h int64
			tag  string
		}{{phoneW, phoneH, "390"}, {tabletW, tabletH, "1024"}} {
			g.viewport(d.w, d.h)
			g.do(scrollTop())
			g.screenshot("guest-menu-" + lang + "-" + d.tag)
		}
	}
	st.checkLayout("staff header with the shop's name")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
