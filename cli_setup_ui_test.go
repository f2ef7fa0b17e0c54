package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSetupWizardScreenshots walks the wizard in Chromium, as an owner
// does, at phone (390 px) and tablet (1024 px) widths in Japanese and
// English: each walk forms a real three-box store, and every step is
// saved as setup-<step>-<lang>-<width>.png in $MO_SCREENSHOT_DIR (the
// owner's guide uses docs/img: MO_SCREENSHOT_DIR=docs/img), else in a
// temporary directory.
func TestSetupWizardScreenshots(t *testing.T) {
	chromium := ""
	for _, name := range []string{os.Getenv("MO_CHROMIUM"), "chromium", "chromium-browser", "/usr/bin/chromium"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI must run the browser tests")
		}
		t.Skip("chromium is not installed: skipping the setup wizard's browser test")
	}
	dir := os.Getenv("MO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("lang", "ja-JP"), chromedp.Flag("accept-lang", "ja-JP,ja"))
	parent, stop := context.WithTimeout(context.Background(), 8*time.Minute)
	defer stop()
	actx, acancel := chromedp.NewExecAllocator(parent, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	for _, lang := range []string{"ja", "en"} {
		for _, w := range []int64{390, 1024} {
			t.Run(fmt.Sprintf("%s-%d", lang, w), func(t *testing.T) {
				walkWizard(t, bctx, dir, lang, w)
			})
		}
	}
}

func walkWizard(t *testing.T, bctx context.Context, dir, lang string, w int64) {
	boxes := startSetupBoxes(t, 3, nil)
	h := int64(844)
	if w > 800 {
		h = 768
	}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	// The tab is created by the first action on ctx itself: under a
	// timeout's child context it would close with that context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cc := context.WithTimeout(ctx, 20*time.Second)
		defer cc()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	until := func(what, js string, limit time.Duration) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			c, cc := context.WithTimeout(ctx, 10*time.Second)
			ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
			cc()
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited for %s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	shot := func(step string) {
		t.Helper()
		// No sideways scrolling at any width.
		until("no sideways scroll", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
		c, cc := context.WithTimeout(ctx, 20*time.Second)
		defer cc()
		if err := chromedp.Do(c, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", step, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("setup-%s-%s-%d.png", step, lang, w)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	visible := func(sel string) string {
		return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0; })()`, sel)
	}
	do("open", chromedp.EmulateViewport(w, h), chromedp.Navigate("http://"+boxes[0].addr+"/setup/"))
	if lang == "en" {
		until("toggle", visible("#lang-toggle"), 10*time.Second)
		do("english", chromedp.Click(chromedp.CSS("#lang-toggle")))
	}
	until("three boxes", `document.querySelectorAll('.box-card').length === 3 && document.querySelectorAll('.box-card.is-picked').length === 3`, 30*time.Second)
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
	shopName := "らーめん 田中"
	if lang == "en" {
		shopName = "Ramen Tanaka"
	}
	do("fill", chromedp.SendKeys(chromedp.CSS("#shop-name"), shopName),
		chromedp.SendKeys(chromedp.CSS("#manager-pw"), "12345678"),
		chromedp.SendKeys(chromedp.CSS("#kitchen-pw"), setupKitchenPW),
		chromedp.Click(chromedp.CSS("#show-pw")))
	do("create (weak)", chromedp.Click(chromedp.CSS("#shop-create")))
	until("weak password refused", visible("#shop-error"), 10*time.Second)
	shot("shop-weak")
	do("fix", chromedp.Evaluate[chromedp.Void](`document.querySelector('#manager-pw').value = ''`), chromedp.SendKeys(chromedp.CSS("#manager-pw"), setupManagerPW))
	shot("shop")
	do("create", chromedp.Click(chromedp.CSS("#shop-create")))
	until("progress", visible("#step-progress")+` || `+visible("#step-done"), 20*time.Second)
	shot("progress")
	until("done", visible("#step-done"), 2*time.Minute)
	until("QR loaded", `document.querySelector('#ca-qr').complete && document.querySelector('#ca-qr').naturalWidth > 0`, 20*time.Second)
	until("sheet filled", `document.querySelector('#sheet-manager').textContent === `+fmt.Sprintf("%q", setupManagerPW), 5*time.Second)
	shot("done")
}
