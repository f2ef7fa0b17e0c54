package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"masterorder/setup"
)

// TestFirstHourInTheBrowser is the owner's first hour as the owner's guide
// (docs/owner-guide.en.md, .ja.md) tells it, in English and in Japanese,
// tapping the buttons by the guide's names: three blank boxes, one of
// whose cards refuses its files. The owner types a guest address name no
// box takes: the page refuses it before any box is reserved, naming the
// field; fixed on the page, the shop is made on the two good boxes and the
// done page names the third. Then the staff screen (manager password): a
// dish on Menu, a table opened on Tables, whose card prints the fallback
// address under the QR code; a guest whose phone cannot resolve .local
// (Chromium resolving no .local name) opens that address, enters the PIN
// and orders; the kitchen screen shows the order. Screenshots of the
// changed screens at 390 and 1024 px go to $MO_SCREENSHOT_DIR when set.
func TestFirstHourInTheBrowser(t *testing.T) {
	bctx := startWizardChromium(t, 10*time.Minute, chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("host-resolver-rules", "MAP *.local ~NOTFOUND"))
	dir := os.Getenv("MO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, c := range []struct {
		lang, languages string
		w               int64
		guide           map[string]string // the guide's words: button and tab names, the refusal's field
	}{
		{"en", "en-US,en", 390, map[string]string{"next": "Next", "create": "Create the shop", "field": "Address name for guests",
			"menu": "Menu", "new": "New item", "tables": "Tables", "open": "Open (QR code and PIN)", "missing": "was not added"}},
		{"ja", "ja-JP,ja", 1024, map[string]string{"next": "次へ", "create": "お店を作る", "field": "お客様用のアドレス名",
			"menu": "メニュー", "new": "新しい商品", "tables": "テーブル", "open": "開く（QRとPINを発行）", "missing": "お店に加えられませんでした"}},
	} {
		t.Run(c.lang, func(t *testing.T) { walkFirstHour(t, bctx, dir, c.lang, c.languages, c.w, c.guide) })
	}
}

func walkFirstHour(t *testing.T, bctx context.Context, dir, lang, languages string, w int64, guide map[string]string) {
	boxes := startSetupBoxes(t, 3, func(i int, l setup.Layout) []string {
		if i == 2 { // this box's card will not take its files
			os.MkdirAll(l.EtcDir, 0o755)
			os.WriteFile(l.TLSDir(), []byte("not a folder"), 0o644)
		}
		return nil
	})
	wt := openWizardAs(t, bctx, languages, w, heightFor(w), boxes[0], 3)
	wt.lang, wt.dir = lang, dir
	tap := func(tb *wizardTab, text string) {
		t.Helper()
		tb.do("tap "+text, chromedp.Click(fmt.Sprintf(`//button[normalize-space(.)=%q]`, text), chromedp.NodeVisible))
	}

	// ---- 4. The wizard: step 1, step 2 with a guest name no box takes
	tap(wt, guide["next"])
	wt.until("shop form", visible("#shop-name"), 10*time.Second)
	wt.do("fill", chromedp.SendKeys(chromedp.CSS("#shop-name"), "Ramen Tanaka"),
		chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW),
		chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
		chromedp.SetValue(chromedp.CSS("#guest-name"), "127.0.0.1"))
	tap(wt, guide["create"])
	wt.until("the refusal", visible("#shop-error"), 30*time.Second)
	if got := wt.eval(`document.querySelector('#shop-error').textContent + ' | ' + document.querySelector('#guest-name').getAttribute('aria-invalid')`); !strings.Contains(got, guide["field"]) || !strings.Contains(got, ".local") || !strings.HasSuffix(got, "| true") {
		t.Errorf("the refused guest name: %q, want the field %q named and marked", got, guide["field"])
	}
	for i, b := range boxes {
		if m := b.layout.ModeOf(); m != setup.ModeSetup {
			t.Errorf("box %d is %s after the refusal, want untouched", i, m)
		}
	}
	shotBoth(wt, "setup-guest-name-refused")
	wt.do("fix the guest name", chromedp.SetValue(chromedp.CSS("#guest-name"), "ramen-tanaka.local"))
	tap(wt, guide["create"])
	wt.until("done", visible("#step-done"), 3*time.Minute)
	missing := wt.eval(`document.querySelector('#done-missing').textContent`)
	if !strings.Contains(missing, shortCodeOf(t, boxes[2])) || (guide["missing"] != "" && !strings.Contains(missing, guide["missing"])) {
		t.Errorf("the done page on the box that failed its push: %q", missing)
	}
	// The buttons go by the store's name; this Chromium resolves no .local
	// name (a tablet before Android 12), so it opens the first box's own
	// address from the setup sheet, as the owner's guide says.
	if link := wt.eval(`document.querySelector('#staff-link').href`); link != "https://ramen-tanaka.local/staff/" && !strings.HasPrefix(link, "https://ramen-tanaka.local:") {
		t.Errorf("the done page's staff button goes to %q, want the store's name", link)
	}
	sheet := wt.eval(`document.querySelector('#sheet-boxes .mono').textContent`)
	staffURL := sheet[strings.LastIndex(sheet, " ")+1:]
	if !strings.HasPrefix(staffURL, "https://") || !strings.HasSuffix(staffURL, "/staff/") {
		t.Fatalf("the setup sheet's fallback address: %q", sheet)
	}
	kitchenURL := strings.TrimSuffix(staffURL, "/staff/") + "/kitchen/"

	// ---- 5. The staff screen: a dish, a table
	staff := openTab(t, bctx, languages, w, staffURL, dir, lang)
	login(staff, setupManagerPW)
	tap(staff, guide["menu"])
	tap(staff, guide["new"])
	staff.until("the menu form", visible("#menu-name"), 10*time.Second)
	staff.do("a dish", chromedp.SendKeys(chromedp.CSS("#menu-name"), "Shoyu ramen"), chromedp.SendKeys(chromedp.CSS("#menu-price"), "900"))
	staff.do("save", chromedp.Click(chromedp.CSS("#menu-save")))
	staff.until("the dish listed", `document.querySelector('#menu-list').textContent.includes('Shoyu ramen')`, 30*time.Second)
	tap(staff, guide["tables"])
	staff.until("open a table", visible("#open-session-table"), 10*time.Second)
	staff.do("T1", chromedp.SendKeys(chromedp.CSS("#open-session-table"), "T1"))
	tap(staff, guide["open"])
	staff.until("the table's card", visible("#session-fallback"), 30*time.Second)
	guestURL := staff.eval(`document.querySelector('#session-url').textContent`)
	fallback := staff.eval(`document.querySelector('#session-fallback').textContent`)
	pin := staff.eval(`document.querySelector('#session-pin').textContent`)
	if !strings.HasPrefix(guestURL, "http://ramen-tanaka.local") || !strings.HasPrefix(fallback, "http://127.0.0.1:") || !strings.Contains(fallback, "/guest/?s=") {
		t.Fatalf("the table's card: QR %q, fallback %q", guestURL, fallback)
	}
	shotBoth(staff, "staff-table-fallback")

	// ---- the kitchen, then a guest whose phone cannot resolve .local
	kitchen := openTab(t, bctx, languages, 1024, kitchenURL, dir, lang)
	login(kitchen, setupKitchenPW)
	kitchen.until("the kitchen live", `document.querySelector('#conn-status').dataset.state === 'live'`, 30*time.Second)
	guest := openTab(t, bctx, languages, 390, guestURL, dir, lang)
	if got := guest.eval(`location.protocol + ' ' + (document.querySelector('#screen-pin') ? 'menu page' : 'no page')`); got != "chrome-error: no page" {
		t.Errorf("a phone that cannot resolve .local opens the QR code's address: %q, want the browser's error", got)
	}
	guest.do("the fallback address", chromedp.Navigate(fallback))
	guest.until("the PIN screen", visible("#pin-input"), 30*time.Second)
	guest.do("the PIN", chromedp.SendKeys(chromedp.CSS("#pin-input"), pin), chromedp.Click(chromedp.CSS("#pin-submit")))
	guest.until("the menu", visible("button[data-menu-id]"), 30*time.Second)
	guest.do("a dish", chromedp.Click(chromedp.CSS("button[data-menu-id]")))
	guest.until("in the cart", `document.querySelector('#cart-count').textContent === '1'`, 10*time.Second)
	guest.do("the cart", chromedp.Click(chromedp.CSS("#nav-cart")))
	guest.until("order button", visible("#cart-confirm"), 10*time.Second)
	guest.do("order", chromedp.Click(chromedp.CSS("#cart-confirm")))
	guest.until("ordered", `!!document.querySelector('#done-message').textContent`, 30*time.Second)
	kitchen.until("the order in the kitchen", `document.querySelector('#order-board').textContent.includes('Shoyu ramen')`, 30*time.Second)
}

// heightFor is a phone's height at 390 px, a tablet's at 1024.
func heightFor(w int64) int64 {
	if w > 800 {
		return 768
	}
	return 844
}

// openTab opens url in a new tab of a browser asking for languages.
func openTab(t *testing.T, bctx context.Context, languages string, w int64, url, dir, lang string) *wizardTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tb := &wizardTab{t: t, ctx: ctx, dir: dir, lang: lang, w: w}
	tb.do("open "+url, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: "Mozilla/5.0 (test) Chrome", AcceptLanguage: languages})
		return err
	}), chromedp.EmulateViewport(w, heightFor(w)))
	c, cc := context.WithTimeout(ctx, 20*time.Second)
	defer cc()
	chromedp.Run(c, chromedp.Navigate(url)) // an address that does not resolve is the browser's error page
	return tb
}

// login logs in on the staff or kitchen screen.
func login(tb *wizardTab, password string) {
	tb.t.Helper()
	tb.until("the login form", visible("#login-password"), 30*time.Second)
	tb.do("log in", chromedp.SendKeys(chromedp.CSS("#login-password"), password), chromedp.Click(chromedp.CSS("#login-submit")))
	tb.until("logged in", `document.querySelector('#login').hidden`, 30*time.Second)
}

// shotBoth saves the screen at 390 and at 1024 px as name-<lang>-<w>.png,
// then goes back to the tab's width.
func shotBoth(tb *wizardTab, name string) {
	tb.t.Helper()
	for _, w := range []int64{390, 1024} {
		tb.do("width", chromedp.EmulateViewport(w, heightFor(w)))
		tb.until("no sideways scroll", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
		// The screen itself: no passing toast, no focus ring over a marked
		// field, from the top.
		tb.until("no toast", `!document.querySelector('#toast') || document.querySelector('#toast').hidden`, 10*time.Second)
		tb.eval(`(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); return ''; })()`)
		c, cc := context.WithTimeout(tb.ctx, 20*time.Second)
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		cc()
		if err != nil {
			tb.t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(tb.dir, fmt.Sprintf("%s-%s-%d.png", name, tb.lang, w)), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	tb.do("width", chromedp.EmulateViewport(tb.w, heightFor(tb.w)))
}

// shortCodeOf is box's short code as the pages show it.
func shortCodeOf(t *testing.T, b *setupBox) string {
	t.Helper()
	return identityOf(t, b).ShortCode()
}
