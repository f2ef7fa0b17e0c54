package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"masterorder/setup"
	"masterorder/setup/cluster"
)

// The setup page as an owner meets it on a phone or a tablet set to a
// language: what it starts in, what it says on the way, and the done page's
// order (print the sheet, then the certificate, then the screens).

// openWizardAs opens box's setup page at w×h in a tab whose browser asks
// for languages (navigator.languages and Accept-Language), like a phone set
// to them, and waits for the n boxes it should find.
func openWizardAs(t *testing.T, bctx context.Context, languages string, w, h int64, box *setupBox, n int) *wizardTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	wt := &wizardTab{t: t, ctx: ctx, dir: t.TempDir(), w: w}
	wt.do("languages", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: "Mozilla/5.0 (test) Chrome", AcceptLanguage: languages})
		return err
	}), chromedp.EmulateViewport(w, h), chromedp.Navigate("http://"+box.addr+"/setup/"))
	wt.until(fmt.Sprintf("%d boxes", n), fmt.Sprintf(`document.querySelectorAll('.box-card').length === %d && document.querySelectorAll('.box-card.is-picked').length === %d`, n, n), 30*time.Second)
	return wt
}

// eval evaluates js in the tab (promises awaited).
func (wt *wizardTab) eval(js string) string {
	wt.t.Helper()
	c, cc := context.WithTimeout(wt.ctx, 20*time.Second)
	defer cc()
	v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		wt.t.Fatalf("eval %s: %v", js, err)
	}
	return v
}

// recordSteps makes the page keep every step each box's progress line
// showed (a MutationObserver: the page redraws the list as it goes).
const recordSteps = `(() => {
	window.__steps = {};
	const seen = () => { for (const li of document.querySelectorAll('#progress-list li[data-box]')) {
		const s = (window.__steps[li.dataset.box] = window.__steps[li.dataset.box] || []);
		if (s[s.length - 1] !== li.dataset.step) s.push(li.dataset.step);
	} };
	new MutationObserver(seen).observe(document.querySelector('#progress-list'), { childList: true, subtree: true, attributes: true });
	return 'ok';
})()`

// TestSetupPageInTheBrowsersLanguage: an English tablet gets the wizard in
// English (title too), an error shown before switching to Japanese is
// worded again in Japanese, and "Create the shop" is on the first screen
// of a 1024×768 tablet. The progress shows each step even though a
// one-box store passes them faster than the page asks. The done page puts
// printing the sheet first, says the iPhone's second certificate step,
// opens the screens in a new tab and keeps the sheet.
func TestSetupPageInTheBrowsersLanguage(t *testing.T) {
	bctx := startWizardChromium(t, 4*time.Minute)
	boxes := startSetupBoxes(t, 1, nil)
	wt := openWizardAs(t, bctx, "en-US,en", 1024, 768, boxes[0], 1)
	if got := wt.eval(`document.documentElement.lang + ' | ' + document.title + ' | ' + document.querySelector('#box-next').textContent`); got != "en | MasterOrder — Setup | Next" {
		t.Errorf("an English browser's wizard: %q, want English", got)
	}
	// Blink on the page's own box: the box's own answer (no LED here).
	wt.do("blink", chromedp.Click(chromedp.CSS(`[data-identify]`)))
	wt.until("the blink's answer", `!document.querySelector('#toast').hidden`, 10*time.Second)
	if got := wt.eval(`document.querySelector('#toast').textContent`); got != "This box has no light to blink." {
		t.Errorf("blink on a box without a light: %q", got)
	}
	wt.do("next", chromedp.Click(chromedp.CSS("#box-next")))
	wt.until("shop form", visible("#shop-name"), 10*time.Second)
	if got := wt.eval(`(() => { const r = document.querySelector('#shop-create').getBoundingClientRect(); return r.bottom <= innerHeight ? 'above' : 'below: bottom ' + Math.round(r.bottom) + ' of ' + innerHeight; })()`); got != "above" {
		t.Errorf("1024×768: Create the shop is %s the fold", got)
	}
	// An error the page made, then a language switch: worded again.
	wt.do("create without a name", chromedp.Click(chromedp.CSS("#shop-create")))
	wt.until("the name asked for", visible("#shop-error")+` && document.querySelector('#shop-error').textContent === 'Enter the shop name.'`, 10*time.Second)
	wt.do("to Japanese", chromedp.Click(chromedp.CSS("#lang-toggle")))
	if got := wt.eval(`document.querySelector('#shop-error').textContent + ' | ' + document.title`); got != "お店の名前を入れてください。 | MasterOrder — セットアップ" {
		t.Errorf("after switching to Japanese: %q", got)
	}
	wt.do("back to English", chromedp.Click(chromedp.CSS("#lang-toggle")))
	wt.do("fill", chromedp.SendKeys(chromedp.CSS("#shop-name"), "Ramen Tanaka"),
		chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW),
		chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW))
	wt.eval(recordSteps)
	wt.do("create", chromedp.Click(chromedp.CSS("#shop-create")))
	wt.until("done", visible("#step-done"), 2*time.Minute)
	steps := wt.eval(`JSON.stringify(Object.values(window.__steps))`)
	if steps != `[["found","claimed","started","joined","ready"]]` {
		t.Errorf("the progress showed %s, want every step in order", steps)
	}

	// The shop's name as typed is in the box's config: the headers show it.
	if raw, err := os.ReadFile(boxes[0].layout.ConfigPath()); err != nil {
		t.Error(err)
	} else if cfg, err := cluster.ParseConfig(raw); err != nil || cfg.Shop.Name != "Ramen Tanaka" {
		t.Errorf("the config's shop name: %q (%v)", cfg.Shop.Name, err)
	}

	// The done page: print first, then the certificate (with the iPhone's
	// trust step), then the screens.
	order := wt.eval(`[...document.querySelectorAll('#step-done > .card h3')].map((h) => h.textContent).join(' | ')`)
	if !strings.HasPrefix(order, "1. First, print the setup sheet | 2. Install the certificate") || !strings.Contains(order, "3. Open the screens") {
		t.Errorf("done page's order: %q", order)
	}
	if got := wt.eval(`document.querySelector('#step-done').textContent`); !strings.Contains(got, "Settings → General → About → Certificate Trust Settings") {
		t.Errorf("the done page does not give the iPhone's trust step: %q", got)
	}
	for _, id := range []string{"#staff-link", "#kitchen-link"} {
		if got := wt.eval(fmt.Sprintf(`document.querySelector(%q).target + ' ' + document.querySelector(%q).rel`, id, id)); got != "_blank noopener" {
			t.Errorf("%s opens with target/rel %q, want a new tab (_blank noopener)", id, got)
		}
	}
	// The sheet names the staff screen's real button, with a letter.
	if got := wt.eval(`document.querySelector('#sheet-replace').textContent`); !strings.Contains(got, "“Replace a with this box”") {
		t.Errorf("the sheet's replace step: %q", got)
	}
	wt.do("to Japanese", chromedp.Click(chromedp.CSS("#lang-toggle")))
	if got := wt.eval(`document.querySelector('#sheet-replace').textContent`); !strings.Contains(got, "「a をこの端末と交換」") {
		t.Errorf("the sheet's replace step in Japanese: %q", got)
	}
	// Opening the staff screen leaves this page, and its sheet, as it was.
	wt.do("staff screen", chromedp.Click(chromedp.CSS("#staff-link")))
	time.Sleep(time.Second) // a navigation of this tab would have started
	if got := wt.eval(`location.pathname + ' ' + document.querySelector('#sheet-manager').textContent`); got != "/setup/ "+setupManagerPW {
		t.Errorf("after tapping the staff screen, this tab shows %q, want the setup page with the sheet", got)
	}
}

// TestSetupFailureScreenSaysSo: when the shop cannot be made (the only
// box's card refuses its files), the progress screen's title and help say
// it failed, not "Creating your shop… Keep this page open", in the
// browser's language (setup-failed-<lang>-<width>.png in
// $MO_SCREENSHOT_DIR when set).
func TestSetupFailureScreenSaysSo(t *testing.T) {
	bctx := startWizardChromium(t, 6*time.Minute)
	for _, c := range []struct {
		lang, languages, creating, keepOpen, failed string
	}{
		{"en", "en-US,en", "Creating", "Keep this page open", "could not be created"},
		{"ja", "ja-JP,ja", "作成しています", "この画面を閉じないでください", "お店を作れませんでした"},
	} {
		for _, w := range []int64{390, 1024} {
			t.Run(fmt.Sprintf("%s-%d", c.lang, w), func(t *testing.T) {
				boxes := startSetupBoxes(t, 1, func(i int, l setup.Layout) []string {
					os.MkdirAll(l.EtcDir, 0o755)
					os.WriteFile(l.TLSDir(), []byte("not a folder"), 0o644)
					return nil
				})
				h := int64(844)
				if w > 800 {
					h = 768
				}
				wt := openWizardAs(t, bctx, c.languages, w, h, boxes[0], 1)
				wt.lang = c.lang
				if d := os.Getenv("MO_SCREENSHOT_DIR"); d != "" {
					wt.dir = d
				}
				wt.do("next", chromedp.Click(chromedp.CSS("#box-next")))
				wt.until("shop form", visible("#shop-name"), 10*time.Second)
				wt.do("create", chromedp.SendKeys(chromedp.CSS("#shop-name"), "Ramen Tanaka"),
					chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW),
					chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
					chromedp.Click(chromedp.CSS("#shop-create")))
				wt.until("failed", visible("#progress-error"), 2*time.Minute)
				wt.until("the box's steps shown up to its failure", `!!document.querySelector('.progress-item.is-failed .err')`, 10*time.Second)
				got := wt.eval(`document.querySelector('#step-progress h2').textContent + ' | ' + document.querySelector('#step-progress > p').textContent`)
				if strings.Contains(got, c.creating) || strings.Contains(got, c.keepOpen) || !strings.Contains(got, c.failed) {
					t.Errorf("the failure screen says %q", got)
				}
				wt.shot("failed")
			})
		}
	}
}

// TestSetupStartOverAfterAFailure (issue 39 #2): after a failed create,
// "Start over" leads back to the boxes, the page reopened does too (not
// to the failure), and once the card is sound the same box makes the shop.
func TestSetupStartOverAfterAFailure(t *testing.T) {
	bctx := startWizardChromium(t, 4*time.Minute)
	boxes := startSetupBoxes(t, 1, func(i int, l setup.Layout) []string {
		os.MkdirAll(l.EtcDir, 0o755)
		os.WriteFile(l.TLSDir(), []byte("not a folder"), 0o644)
		return nil
	})
	wt := openWizardAs(t, bctx, "en-US,en", 1024, 768, boxes[0], 1)
	fill := func() {
		wt.do("next", chromedp.Click(chromedp.CSS("#box-next")))
		wt.until("shop form", visible("#shop-name"), 10*time.Second)
		wt.do("fill", chromedp.SetValue(chromedp.CSS("#shop-name"), "Ramen Tanaka"),
			chromedp.SetValue(chromedp.CSS("#manager-pw"), setupManagerPW),
			chromedp.SetValue(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
			chromedp.Click(chromedp.CSS("#shop-create")))
	}
	fill()
	wt.until("failed", visible("#progress-retry"), 2*time.Minute)
	wt.do("start over", chromedp.Click(chromedp.CSS("#progress-retry")))
	wt.until("the boxes again", visible("#step-boxes")+` && document.querySelectorAll('.box-card').length === 1`, 30*time.Second)
	wt.do("reopen", chromedp.Reload())
	wt.until("the page reopened", visible("#step-boxes")+` || `+visible("#step-progress"), 30*time.Second)
	if got := wt.eval(`document.querySelector('#step-progress').hidden ? 'boxes' : 'the failure again'`); got != "boxes" {
		t.Fatalf("after a failure, the page reopened shows %s", got)
	}
	os.Remove(boxes[0].layout.TLSDir()) // the owner changed the card
	wt.until("the box listed", `document.querySelectorAll('.box-card.is-picked').length === 1`, 30*time.Second)
	fill()
	wt.until("done", visible("#step-done"), 2*time.Minute)
}
