package cli

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"masterorder/httpapi"
	"masterorder/setup"
)

// TestSetupWizardTimeZone (issue 37): the wizard's shop step offers the
// owner's phone's time zone (a Japanese phone: Asia/Tokyo; a phone in
// London: Europe/London), a zone no box knows is refused with its words
// on the field before any box is claimed, and the chosen zone ends in the
// box's config ([shop] time_zone). Screenshots setup-zone-* and
// setup-zone-refused-* at 390 and 1024 px in $MO_SCREENSHOT_DIR.
func TestSetupWizardTimeZone(t *testing.T) {
	bctx := startWizardChromium(t, 5*time.Minute)
	dir := os.Getenv("MO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, c := range []struct {
		lang, phone string
		w           int64
	}{{"ja", "Asia/Tokyo", 390}, {"ja", "Asia/Tokyo", 1024}, {"en", "Europe/London", 390}, {"en", "Europe/London", 1024}} {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.w), func(t *testing.T) {
			boxes := startSetupBoxes(t, 1, nil)
			wt := openWizard(t, bctx, dir, c.lang, c.w, boxes[0], 1)
			wt.do("the phone's zone", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: c.phone})
				return err
			}))
			wt.do("next", chromedp.Click(chromedp.CSS("#box-next")))
			wt.until("shop form", visible("#time-zone"), 10*time.Second)
			wt.until("the phone's zone chosen", fmt.Sprintf(`document.querySelector('#time-zone').value === %q && document.querySelectorAll('#time-zone option').length > 50`, c.phone), 5*time.Second)
			wt.do("fill", chromedp.SendKeys(chromedp.CSS("#shop-name"), wt.shopName()),
				chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW),
				chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW))
			wt.shot("zone")
			// A zone the boxes do not know (a browser newer than the
			// boxes' zone database could list one): the boxes' rule
			// refuses it, on the field, before any box is claimed.
			wt.do("an unknown zone", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#time-zone'); const o = document.createElement('option'); o.value = o.textContent = 'Asia/Atlantis'; s.append(o); s.value = 'Asia/Atlantis'; })()`),
				chromedp.Click(chromedp.CSS("#shop-create")))
			wt.until("refused on the zone", visible("#shop-error")+fmt.Sprintf(` && document.querySelector('#shop-error').textContent === %q && document.querySelector('#time-zone').getAttribute('aria-invalid') === 'true'`,
				httpapi.Message("INVALID_TIME_ZONE", wt.english)), 60*time.Second)
			if m := boxes[0].layout.ModeOf(); m != setup.ModeSetup {
				t.Fatalf("the refused zone left the box %q", m)
			}
			wt.shot("zone-refused")
			wt.do("the phone's zone again", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('#time-zone').value = %q`, c.phone)),
				chromedp.Click(chromedp.CSS("#shop-create")))
			wt.until("done", visible("#step-done"), 2*time.Minute)
			if got := boxConfig(t, boxes[0].layout).Shop.TimeZone; got != c.phone {
				t.Errorf("the box's time_zone is %q, want %q", got, c.phone)
			}
		})
	}
}
