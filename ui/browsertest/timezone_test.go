package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"masterorder/httpapi"
	"masterorder/orders"
)

// inZone makes the tab's device run in zone (a tablet set to another
// zone than the store's).
func (tb *tab) inZone(zone string) {
	tb.t.Helper()
	tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	}))
}

// save taps the card's Save and waits for the boxes' answer to it.
func (tb *tab) save() {
	tb.t.Helper()
	before := eval[string](tb, `document.querySelector('#zone-card').dataset.saves || '0'`)
	tb.click("#zone-save")
	tb.waitFor("the save answered", fmt.Sprintf(`(document.querySelector('#zone-card').dataset.saves || '0') !== %q && !document.querySelector('#zone-save').disabled`, before), 15*time.Second)
}

// zoneShots saves the card at 390 and 1024 px as <name>-<lang>-<width>.png,
// scrolled to it, without an earlier save's toast.
func zoneShots(tb *tab, name string) {
	tb.t.Helper()
	lang := eval[string](tb, `document.documentElement.lang`)
	eval[bool](tb, `(() => { document.querySelector('#toast').hidden = true; return true; })()`)
	for _, w := range []struct {
		w, h int64
		tag  string
	}{{phoneW, phoneH, "390"}, {tabletW, tabletH, "1024"}} {
		tb.viewport(w.w, w.h)
		tb.do(scrollTop())
		tb.scrollBelowBars("#zone-card")
		tb.screenshot(name + "-" + lang + "-" + w.tag)
	}
	tb.viewport(phoneW, phoneH)
}

// TestTimeZoneScreens (issue 37): a store in Asia/Tokyo seen from tablets
// set to New York. The staff console and the kitchen screen show times on
// the store's clock (the kitchen's clock, the console's times, the
// reports' business day), not the tablet's. The Boxes page's "Store time
// zone" card says the zone and the store's time; a zone no box knows is
// refused in words; choosing Los Angeles there sets it on every box and
// the screens follow. Screenshots console-zone-* and
// console-zone-refused-* at 390 and 1024 px, ja and en.
func TestTimeZoneScreens(t *testing.T) {
	b := startBrowser(t)
	s := startStoreWith(t, func(c *orders.FileConfig) { c.Shop.TimeZone = "Asia/Tokyo" })
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	la, _ := time.LoadLocation("America/Los_Angeles")
	n := s.leader()

	// The kitchen's clock reads the store's hour, not New York's.
	k := b.open("kitchen", s.url((n+2)%3)+"/kitchen/", tabletW, tabletH)
	k.inZone("America/New_York")
	k.loginAs(kitchenPassword)
	clockIs := func(loc *time.Location) string {
		now := time.Now()
		return fmt.Sprintf(`['%s', '%s'].includes(document.querySelector('#clock').textContent)`, now.In(loc).Format("15:04"), now.Add(time.Minute).In(loc).Format("15:04"))
	}
	k.waitFor("the kitchen clock on Tokyo time", clockIs(tokyo), 20*time.Second)

	st := b.open("staff-zone", s.url((n+1)%3)+"/staff/#cluster", phoneW, phoneH)
	st.inZone("America/New_York")
	st.login()
	st.waitFor("the card, from the file", `document.querySelector('#zone-card').dataset.source === 'file' && document.querySelector('#zone-select').value === 'Asia/Tokyo'`, 15*time.Second)
	// 15:30 UTC is 00:30 the next day in Tokyo (10:30 in New York).
	if got := eval[string](st, `import('/assets/dom.js').then((m) => m.dateTimeOf('2026-12-05T15:30:00Z'))`); got != "2026-12-06 00:30:00" {
		t.Errorf("the console shows 2026-12-05T15:30Z as %q, want Tokyo's 2026-12-06 00:30:00", got)
	}
	if got, want := eval[string](st, `import('/staff/reports.js').then((m) => m.businessDate())`), time.Now().In(tokyo).Add(-5*time.Hour).Format("2006-01-02"); got != want {
		t.Errorf("the reports' business day is %q, want Tokyo's %q", got, want)
	}

	for _, lang := range []string{"ja", "en"} {
		en := lang == "en"
		if eval[string](st, `document.documentElement.lang`) != lang {
			st.click("#lang-toggle")
			st.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		if now := st.text("#zone-now"); !strings.Contains(now, "Asia/Tokyo") {
			t.Errorf("%s: the card says %q, want the zone named", lang, now)
		}
		zoneShots(st, "console-zone")
		// A zone no box knows: refused in words, nothing changes.
		eval[bool](st, `(() => { const s = document.querySelector('#zone-select'); const o = document.createElement('option'); o.value = o.textContent = 'Asia/Atlantis'; s.append(o); s.value = 'Asia/Atlantis'; return true; })()`)
		st.click("#zone-save")
		st.waitFor("INVALID_TIME_ZONE in words", fmt.Sprintf(`!document.querySelector('#zone-error').hidden && document.querySelector('#zone-error').textContent === %q`, httpapi.Message("INVALID_TIME_ZONE", en)), 15*time.Second)
		zoneShots(st, "console-zone-refused")
		eval[bool](st, `(() => { document.querySelector('#zone-select').value = 'Asia/Tokyo'; document.querySelector('#zone-select option[value="Asia/Atlantis"]').remove(); return true; })()`)
		st.save()
		st.waitFor("saved", `document.querySelector('#zone-error').hidden && document.querySelector('#zone-card').dataset.source === 'console'`, 15*time.Second)
	}

	// Los Angeles, from the console: every box, and the screens follow.
	st.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#zone-select').value = 'America/Los_Angeles'`))
	st.save()
	st.waitFor("Los Angeles saved", `document.querySelector('#zone-card').dataset.source === 'console' && document.querySelector('#zone-now').textContent.includes('Los Angeles')`, 15*time.Second)
	for i := range 3 {
		var v struct {
			TimeZone string `json:"timeZone"`
			Source   string `json:"source"`
		}
		s.staff(i, "GET", "/api/staff/time-zone", nil).decode(t, &v)
		if v.TimeZone != "America/Los_Angeles" || v.Source != "console" {
			t.Errorf("box %d after the console's change: %+v", i, v)
		}
	}
	if got := eval[string](st, `import('/assets/dom.js').then((m) => m.dateTimeOf('2026-12-05T15:30:00Z'))`); got != "2026-12-05 07:30:00" {
		t.Errorf("after the change the console shows 2026-12-05T15:30Z as %q, want Los Angeles' 2026-12-05 07:30:00", got)
	}
	// The kitchen picks the zone up with its next status poll.
	k.do(chromedp.Evaluate[chromedp.Void](`location.reload()`))
	k.waitFor("the kitchen clock on Los Angeles time", clockIs(la), 30*time.Second)
}
