package browsertest

import (
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
