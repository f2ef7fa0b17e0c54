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

	"masterorder/httpapi"
	"masterorder/internal/chromiumtest"
	"masterorder/setup"
)

// TestSetupWizardScreenshots walks the wizard in Chromium, as an owner
// does, at phone (390 px) and tablet (1024 px) widths in Japanese and
// English: each walk forms a real three-box store (and one more where a
// box's card refuses its files), and every step is saved as
// setup-<step>-<lang>-<width>.png in $MO_SCREENSHOT_DIR (the
// owner's guide uses docs/img: MO_SCREENSHOT_DIR=docs/img), else in a
// temporary directory.
func TestSetupWizardScreenshots(t *testing.T) {
	bctx := startWizardChromium(t, 8*time.Minute)
	dir := os.Getenv("MO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"ja", "en"} {
		for _, w := range []int64{390, 1024} {
			t.Run(fmt.Sprintf("%s-%d", lang, w), func(t *testing.T) {
				walkWizard(t, bctx, dir, lang, w)
			})
			t.Run(fmt.Sprintf("%s-%d-one-box-fails", lang, w), func(t *testing.T) {
				walkWizardOneBoxFails(t, bctx, dir, lang, w)
			})
		}
	}
}

// startWizardChromium starts a headless Chromium (a Japanese one, as the
// browser tests' phones are) for at most budget; it stops with the test.
// Without Chromium the test is skipped, except in CI.
func startWizardChromium(t *testing.T, budget time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	chromium := chromiumtest.Path(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR="+chromiumtest.TempDir(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("lang", "ja-JP"), chromedp.Flag("accept-lang", "ja-JP,ja"))
	opts = append(opts, extra...)
	parent, stop := context.WithTimeout(context.Background(), budget)
	actx, acancel := chromedp.NewExecAllocator(parent, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
		stop()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// wizardTab is one Chromium tab on a box's setup page.
type wizardTab struct {
	t       *testing.T
	ctx     context.Context
	dir     string
	lang    string
	w       int64
	english bool
}

// openWizard opens box's setup page at width w in lang (the toggle for
// English) and waits for the n boxes it should find, all ticked.
func openWizard(t *testing.T, bctx context.Context, dir, lang string, w int64, box *setupBox, n int) *wizardTab {
	h := int64(844)
	if w > 800 {
		h = 768
	}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The tab is created by the first action on ctx itself: under a
	// timeout's child context it would close with that context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	wt := &wizardTab{t: t, ctx: ctx, dir: dir, lang: lang, w: w, english: lang == "en"}
	wt.do("open", chromedp.EmulateViewport(w, h), chromedp.Navigate("http://"+box.addr+"/setup/"))
	if wt.english {
		wt.until("toggle", visible("#lang-toggle"), 10*time.Second)
		wt.do("english", chromedp.Click(chromedp.CSS("#lang-toggle")))
	}
	wt.until(fmt.Sprintf("%d boxes", n), fmt.Sprintf(`document.querySelectorAll('.box-card').length === %d && document.querySelectorAll('.box-card.is-picked').length === %d`, n, n), 30*time.Second)
	return wt
}

func (wt *wizardTab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	wt.t.Helper()
	c, cc := context.WithTimeout(wt.ctx, 20*time.Second)
	defer cc()
	if err := chromedp.Do(c, actions...); err != nil {
		wt.t.Fatalf("%s: %v", what, err)
	}
}

func (wt *wizardTab) until(what, js string, limit time.Duration) {
	wt.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		c, cc := context.WithTimeout(wt.ctx, 10*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
		cc()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			wt.t.Fatalf("waited for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shot saves the page as setup-<step>-<lang>-<width>.png.
func (wt *wizardTab) shot(step string) {
	wt.t.Helper()
	// No sideways scrolling at any width.
	wt.until("no sideways scroll", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
	c, cc := context.WithTimeout(wt.ctx, 20*time.Second)
	defer cc()
	if err := chromedp.Do(c, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`)); err != nil {
		wt.t.Fatal(err)
	}
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		wt.t.Fatalf("screenshot %s: %v", step, err)
	}
	if err := os.WriteFile(filepath.Join(wt.dir, fmt.Sprintf("setup-%s-%s-%d.png", step, wt.lang, wt.w)), png, 0o644); err != nil {
		wt.t.Fatal(err)
	}
}

// visible is a script: sel is shown (not under [hidden]) and laid out.
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0; })()`, sel)
}

// shopName is the name the walks type, in the page's language.
func (wt *wizardTab) shopName() string {
	if wt.english {
		return "Ramen Tanaka"
	}
	return "らーめん 田中"
}

func walkWizard(t *testing.T, bctx context.Context, dir, lang string, w int64) {
	boxes := startSetupBoxes(t, 3, nil)
	wt := openWizard(t, bctx, dir, lang, w, boxes[0], 3)
	ctx, do, until, shot, english := wt.ctx, wt.do, wt.until, wt.shot, wt.english
	shot("boxes")
	// One box only: the warning.
	pick := func(i int) chromedp.Action[chromedp.Void] { // the list is drawn anew after each tap
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelectorAll('.box-card input[type=checkbox]')[%d].click()`, i))
	}
	do("untick", pick(1), pick(2))
	until("one-box warning", visible("#box-warning")+` && document.querySelectorAll('.box-card.is-picked').length === 1`, 5*time.Second)
	shot("boxes-one")
	do("tick again", pick(1), pick(2))
	until("no warning", `document.querySelector('#box-warning').hidden`, 5*time.Second)
	do("next", chromedp.Click(chromedp.CSS("#box-next")))
	until("shop form", visible("#shop-name"), 10*time.Second)
	do("fill", chromedp.SendKeys(chromedp.CSS("#shop-name"), wt.shopName()),
		chromedp.SendKeys(chromedp.CSS("#manager-pw"), "12345678"),
		chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
		chromedp.Click(chromedp.CSS("#show-pw")))
	// The page applies init's strength rule itself (the boxes only ever
	// see hashes), with the words a box's refusal has, on the field to fix.
	refusedOn := func(code, input string) string {
		return visible("#shop-error") + fmt.Sprintf(` && document.querySelector('#shop-error').textContent === %q && document.activeElement === document.querySelector(%q)`,
			httpapi.Message(code, english), input)
	}
	// Every request the page makes from here is recorded: none may carry a password.
	do("record requests", chromedp.Evaluate[chromedp.Void](`window.__bodies = []; { const f = window.fetch; window.fetch = (u, o) => { window.__bodies.push(String(o && o.body)); return f(u, o); }; }`))
	do("create (weak)", chromedp.Click(chromedp.CSS("#shop-create")))
	until("weak password refused", refusedOn("WEAK_PASSWORD", "#manager-pw"), 10*time.Second)
	shot("shop-weak")
	do("same as the kitchen's", chromedp.Evaluate[chromedp.Void](`document.querySelector('#manager-pw').value = ''`), chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupKitchenPW),
		chromedp.Click(chromedp.CSS("#shop-create")))
	until("same passwords refused", refusedOn("SAME_PASSWORDS", "#kitchen-pw"), 10*time.Second)
	do("fix", chromedp.Evaluate[chromedp.Void](`document.querySelector('#manager-pw').value = ''`), chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW))
	shot("shop")
	// What hashing costs: two cost-10 bcrypt hashes by the page's own
	// module in this headless Chromium (a figure for the notes).
	c, cc := context.WithTimeout(ctx, time.Minute)
	ms, err := chromedp.Run(c, chromedp.Evaluate[float64](`(async () => { const m = await import('/setup/bcrypt.js'); const t = performance.now();
		await m.bcryptHash('tonkotsu-2026-shop'); await m.bcryptHash('kitchen screen 77'); return performance.now() - t; })()`, chromedp.EvalAwaitPromise))
	cc()
	if err != nil {
		t.Fatalf("time bcrypt in the page: %v", err)
	}
	t.Logf("two cost-10 bcrypt hashes in headless Chromium: %.0f ms", ms)
	// The create button says it is working while the page hashes: on a
	// CPU slowed ten times (an old phone), long enough to photograph.
	throttle := func(rate float64) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: rate})
			return err
		})
	}
	working := fmt.Sprintf(`document.querySelector('#shop-create').disabled && document.querySelector('#shop-create').getAttribute('aria-busy') === 'true' && document.querySelector('#shop-create').textContent === %q`,
		map[bool]string{false: "処理しています…", true: "Working…"}[english])
	do("create", throttle(10), chromedp.Click(chromedp.CSS("#shop-create")))
	until("working", working+` || !`+visible("#step-shop"), 20*time.Second)
	if ok, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](working)); ok {
		shot("shop-working")
	} else {
		t.Log("hashing ended before the working state could be photographed")
	}
	do("full speed", throttle(1))
	until("progress", visible("#step-progress")+` || `+visible("#step-done"), 60*time.Second)
	shot("progress")
	until("done", visible("#step-done"), 2*time.Minute)
	until("QR loaded", `document.querySelector('#ca-qr').complete && document.querySelector('#ca-qr').naturalWidth > 0`, 20*time.Second)
	until("sheet filled", `document.querySelector('#sheet-manager').textContent === `+fmt.Sprintf("%q", setupManagerPW)+
		` && document.querySelector('#sheet-kitchen').textContent === `+fmt.Sprintf("%q", setupKitchenPW), 5*time.Second)
	shot("done")
	// The boxes got hashes, made by the page, that Go's bcrypt takes; no
	// request carried a password.
	bodies, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__bodies`))
	if err != nil {
		t.Fatal(err)
	}
	created := false
	for _, b := range bodies {
		if strings.Contains(b, setupManagerPW) || strings.Contains(b, setupKitchenPW) {
			t.Errorf("the page sent a password: %s", b)
		}
		created = created || strings.Contains(b, `"managerPasswordHash":"$2a$10$`)
	}
	if !created {
		t.Errorf("no create request with a cost-10 hash among %q", bodies)
	}
	if cfg := boxConfig(t, boxes[0].layout); !takesSetupPasswords(cfg) {
		t.Errorf("the page's hashes in the config (%q, %q) do not take the passwords", cfg.Staff.PasswordHash, cfg.Staff.KitchenPasswordHash)
	}
}

// walkWizardOneBoxFails: the third box's card will not take its files.
// The store forms on the other two, and the done page names the missing
// box, why, and what to do, in words (setup-done-missing-*.png).
func walkWizardOneBoxFails(t *testing.T, bctx context.Context, dir, lang string, w int64) {
	boxes := startSetupBoxes(t, 3, func(i int, l setup.Layout) []string {
		if i == 2 { // where its TLS folder goes, a file: writing there fails
			os.MkdirAll(l.EtcDir, 0o755)
			os.WriteFile(l.TLSDir(), []byte("not a folder"), 0o644)
		}
		return nil
	})
	wt := openWizard(t, bctx, dir, lang, w, boxes[0], 3)
	wt.do("next", chromedp.Click(chromedp.CSS("#box-next")))
	wt.until("shop form", visible("#shop-name"), 10*time.Second)
	wt.do("create", chromedp.SendKeys(chromedp.CSS("#shop-name"), wt.shopName()),
		chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW),
		chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
		chromedp.Click(chromedp.CSS("#shop-create")))
	wt.until("done", visible("#step-done"), 2*time.Minute)
	why := httpapi.Message("CARD_WRITE_FAILED", wt.english)
	wt.until("the missing box named, with why", visible("#done-missing")+fmt.Sprintf(` && document.querySelector('#done-missing').textContent.includes(%q)`, why), 10*time.Second)
	wt.shot("done-missing")
	if boxes[2].layout.ModeOf() != setup.ModeSetup {
		t.Errorf("the box that failed is %s, want given back to setup mode", boxes[2].layout.ModeOf())
	}
}
