package browsertest

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The owner adds dishes without ever typing an id: the menu form has no id
// field, a new item's id comes from its name (a name another item has gets
// a suffix), an item's id stays when it is renamed, and a wrong field is
// marked with its message right below it. On a phone the menu list's Edit
// buttons are on screen and the ids under the names stay on one line; the
// id fields' patterns work in the browser (Chrome's v flag refused
// "[A-Za-z0-9_-]", and the browser's own check was off), and nothing
// stray ("null") shows under the picture chooser.
// regexpNull finds a "null" or "undefined" shown as a word.
var regexpNull = regexp.MustCompile(`\b(null|undefined)\b`)

func TestStaffMenuIdsFromNames(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	st := b.open("staff", s.url(0)+"/staff/", phoneW, phoneH)
	st.login()
	st.waitVisible("#open-session-table")
	for _, sel := range []string{"#open-session-table", "#stock-sku", "#printer-id"} {
		if !st.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = 'T 1!'; const bad = e.validity.patternMismatch; e.value = 'T1'; return bad && !e.validity.patternMismatch; })()`, sel)) {
			t.Errorf("%s: the browser does not check its pattern", sel)
		}
	}
	st.click(`#tabs button[data-tab="menu"]`)
	st.waitVisible(`#menu-list tr[data-menu-id="shoyu"]`)
	if st.eval(`!!document.querySelector('#menu-id')`) {
		t.Error("the menu form still asks for an id")
	}
	docShots(st, "staff-menu", `!!document.querySelector('#menu-list tr[data-menu-id="shoyu"]')`)
	if got := eval[string](st, `document.querySelector('#menu-content').innerText`); regexpNull.MatchString(got) {
		t.Errorf("the content block shows %q", got)
	}
	// On a phone: every Edit button on screen (within the list's width),
	// every id on one line.
	if got := eval[string](st, `(() => {
		const w = Math.min(document.documentElement.clientWidth, document.querySelector('#menu-list').closest('.table-wrap').getBoundingClientRect().right), out = [];
		for (const tr of document.querySelectorAll('#menu-list tr[data-menu-id]')) {
			const b = tr.querySelector('[data-action="edit"]');
			if (b.getBoundingClientRect().right > w + 1 || b.getClientRects().length !== 1 || b.scrollHeight > b.clientHeight + 1) out.push(tr.dataset.menuId + ' edit at ' + Math.round(b.getBoundingClientRect().right) + ' of ' + Math.round(w));
			const id = tr.querySelector('.item-id');
			if (!id || id.getClientRects().length !== 1) out.push(tr.dataset.menuId + ' id over ' + (id ? id.getClientRects().length : 0) + ' lines');
		}
		return out.join(', ');
	})()`); got != "" {
		t.Errorf("the menu list at %d px: %s", phoneW, got)
	}

	newItem := func(name, price string) {
		t.Helper()
		st.click("#menu-new")
		st.waitFor("an empty form", `document.querySelector('#menu-form').dataset.menuId === '' && document.querySelector('#menu-name').value === ''`, 5*time.Second)
		st.typeInto("#menu-name", name)
		st.do(chromedp.SetValue(chromedp.CSS("#menu-price"), price))
		st.click("#menu-save")
	}
	// A wrong field: marked, its message right below it.
	newItem("", "800")
	st.waitFor("the name marked", `document.querySelector('#menu-name').getAttribute('aria-invalid') === 'true'`, 5*time.Second)
	if got := eval[string](st, `(() => { const n = document.querySelector('#menu-name').nextElementSibling; return n && n.classList.contains('field-error') && !n.hidden ? n.textContent : ''; })()`); got != "名前を入力してください。" {
		t.Errorf("the name's message below it: %q", got)
	}
	if !st.eval(`document.querySelector('#menu-error').hidden`) {
		t.Error("the message shows at the bottom of the form too")
	}
	docShotsBelow(st, "staff-menu-error", "", "#menu-form")
	// In English, the whole form speaks English, the name's message too.
	st.click("#lang-toggle")
	if got := eval[string](st, `[document.querySelector('#menu-form-title'), document.querySelector('#menu-name + .field-error'), document.querySelector('#menu-options h3'), document.querySelector('#menu-content h3')].map((e) => e.textContent).join(' | ')`); got != "New item | Enter a name. | Choices (noodle firmness, …) | Description, allergens, picture, languages" {
		t.Errorf("the new-item form in English: %q", got)
	}
	st.click("#lang-toggle")
	st.typeInto("#menu-name", "醤油らーめん")
	st.click("#menu-save")
	st.waitVisible(`#menu-list tr[data-menu-id="ramen"]`)
	if st.eval(`document.querySelector('#menu-name').hasAttribute('aria-invalid')`) {
		t.Error("the name stays marked after a good save")
	}
	newItem("らーめん", "700")
	st.waitVisible(`#menu-list tr[data-menu-id="ramen-2"]`)
	// Renamed: the id stays.
	st.editMenuItem("ramen")
	eval[bool](st, `document.querySelector('#menu-name').value = ''; true`)
	st.typeInto("#menu-name", "Tonkotsu special")
	st.click("#menu-save")
	st.waitFor("renamed in the list", `(document.querySelector('#menu-list tr[data-menu-id="ramen"]') || {}).textContent.includes('Tonkotsu special')`, 10*time.Second)
	if st.eval(`!!document.querySelector('#menu-list tr[data-menu-id="tonkotsu-special"]')`) {
		t.Error("renaming made a new item")
	}
	var menu struct {
		Items []struct {
			MenuID, Name string
			Price        int
		}
	}
	s.staff(0, "GET", "/api/staff/menu", nil).decode(t, &menu)
	got := map[string]string{}
	for _, it := range menu.Items {
		got[it.MenuID] = fmt.Sprint(it.Name, " ", it.Price)
	}
	if got["ramen"] != "Tonkotsu special 800" || got["ramen-2"] != "らーめん 700" {
		t.Errorf("the server's menu: ramen %q, ramen-2 %q", got["ramen"], got["ramen-2"])
	}
}
