package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// chooseLang picks a language in the guest app's switcher, as a tap on
// the menu would.
func chooseLang(tb *tab, lang string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(() => { const s = document.querySelector('#lang-select'); s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, lang))
}

// openWithLanguages opens url in a tab whose browser reports languages
// (navigator.languages and Accept-Language), like a phone set to them.
func (b *browser) openWithLanguages(name, url string, w, h int64, languages string) *tab {
	b.t.Helper()
	tb := b.open(name, "about:blank", w, h)
	ua := eval[string](tb, `navigator.userAgent`)
	tb.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: languages})
		return err
	}))
	tb.do(chromedp.Navigate(url))
	return tb
}

// picture is a JPEG of a bowl-ish shape, for the menu.
func picture(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := float64(x-w/2)/float64(w/2), float64(y-h/2)/float64(h/2)
			c := color.RGBA{60, 40, 30, 255}
			if dx*dx+dy*dy < 0.7 {
				c = color.RGBA{230, 180, uint8(100 + x%40), 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// putContent gives some demo items their words and pictures.
func (s *store) putContent(n int) {
	s.t.Helper()
	items := map[string]map[string]any{
		"tonkotsu": {"name": "豚骨ラーメン", "nameEn": "Tonkotsu ramen", "category": "noodles", "price": 1000, "sortOrder": 4,
			"names": map[string]string{"zh-Hans": "豚骨拉面", "ko": "돈코츠 라멘"}, "description": "濃厚な豚骨スープと細麺",
			"descriptionEn": "Rich pork-bone broth, thin noodles", "allergens": []string{"wheat", "egg", "soy", "sesame", "pork"},
			"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}}},
		"gyoza": {"name": "餃子（6個）", "nameEn": "Gyoza (6)", "category": "sides", "price": 450, "sortOrder": 10,
			"names": map[string]string{"zh-Hans": "煎饺（6个）", "ko": "교자 (6개)"}, "allergens": []string{"wheat", "pork"}},
		"oolong": {"name": "烏龍茶", "nameEn": "Oolong tea", "category": "drinks", "price": 300, "sortOrder": 31,
			"names": map[string]string{"zh-Hans": "乌龙茶", "ko": "우롱차"}, "allergens": []string{}},
	}
	for id, body := range items {
		if r := s.staff(n, "PUT", "/api/staff/menu/"+id, body); r.status != 200 {
			s.t.Fatalf("PUT %s: %d %s", id, r.status, r.body)
		}
	}
	for _, id := range []string{"tonkotsu", "gyoza"} {
		req, _ := http.NewRequest("PUT", s.url(n)+"/api/staff/menu/"+id+"/image", bytes.NewReader(picture(s.t, 640, 480)))
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "image/jpeg")
		res, err := s.hc.Do(req)
		if err != nil || res.StatusCode != 200 {
			s.t.Fatalf("picture of %s: %v %v", id, err, res)
		}
		res.Body.Close()
	}
	if r := s.staff(n, "PUT", "/api/staff/categories/noodles", map[string]any{"names": map[string]string{"zh-Hans": "面类", "ko": "면 요리"}}); r.status != 200 {
		s.t.Fatalf("category names: %d %s", r.status, r.body)
	}
	s.c.WaitConverged(10 * time.Second)
}

// On a phone (390×844) the guest sees pictures, descriptions and allergen
// marks, and "hide items with …" hides what it should; a browser set to
// Chinese opens the app in Chinese, with the items' own Chinese names, and
// the switcher offers the four languages.
func TestGuestMenuContentAndLanguages(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	s.putContent(n)
	sess := s.openSession(n, "C1")
	follower := (n + 1) % 3

	g := b.open("guest-ja", s.url(follower)+"/guest/?s="+sess.SessionID, phoneW, phoneH)
	g.waitVisible("#screen-pin")
	if lang := eval[string](g, `document.documentElement.lang`); lang != "ja" {
		t.Fatalf("a Japanese phone opens in %q", lang)
	}
	g.typeInto("#pin-input", sess.PIN)
	g.click("#pin-submit")
	card := `[data-item-id="tonkotsu"]`
	g.waitVisible(card + " img.menu-photo")
	g.waitFor("the picture loaded", `(() => { const i = document.querySelector('[data-item-id="tonkotsu"] img.menu-photo'); return i.complete && i.naturalWidth === 640; })()`, 10*time.Second)
	if got := g.text(card + " .desc"); got != "濃厚な豚骨スープと細麺" {
		t.Errorf("description %q", got)
	}
	if got := eval[string](g, `[...document.querySelectorAll('[data-item-id="tonkotsu"] .allergen')].map(e => e.textContent).join(',')`); got != "小麦,卵,大豆,ごま,豚肉" {
		t.Errorf("allergen marks %q", got)
	}
	if g.visible(`[data-item-id="oolong"] .allergens`) {
		t.Error("an item without allergens shows marks")
	}
	g.screenshot("guest-menu-content-phone")

	// Hide items with pork: the two pork dishes go, the tea stays; the bar
	// says how many are hidden; the choice survives a reload.
	g.click("#filter-toggle")
	g.waitVisible("#filter-panel")
	g.screenshot("guest-filter-open-phone")
	g.click(`#filter-panel input[value="pork"]`)
	g.waitFor("the pork dishes hidden", `!document.querySelector('[data-item-id="tonkotsu"]') && !document.querySelector('[data-item-id="gyoza"]')`, 5*time.Second)
	if !g.visible(`[data-item-id="oolong"]`) || !g.visible(`[data-item-id="shoyu"]`) {
		t.Error("the filter hid items without pork")
	}
	if got := g.text("#filter-hidden"); got != "2 品を非表示中" {
		t.Errorf("hidden count %q", got)
	}
	g.click(`#filter-panel button.primary`)
	g.waitFor("the panel closed", `!document.querySelector('#filter-panel')`, 5*time.Second)
	g.screenshot("guest-filter-applied-phone")
	g.do(chromedp.Reload())
	g.waitVisible(`[data-item-id="oolong"]`)
	if eval[bool](g, `!!document.querySelector('[data-item-id="tonkotsu"]')`) {
		t.Error("the filter was forgotten on reload")
	}
	g.viewport(tabletW, tabletH)
	g.screenshot("guest-filter-applied-tablet")
	g.viewport(phoneW, phoneH)

	// A browser in Chinese.
	zh := b.openWithLanguages("guest-zh", s.url(n)+"/guest/?s="+sess.SessionID, phoneW, phoneH, "zh-CN,zh;q=0.9,en;q=0.8")
	zh.waitVisible("#screen-pin")
	if got := zh.text("#screen-pin h2"); got != "请输入 PIN 码" {
		t.Errorf("a Chinese phone's PIN screen says %q", got)
	}
	zh.screenshot("guest-pin-zh-phone")
	zh.typeInto("#pin-input", sess.PIN)
	zh.click("#pin-submit")
	zh.waitVisible(card + " img.menu-photo")
	if lang := eval[string](zh, `document.documentElement.lang`); lang != "zh-Hans" {
		t.Errorf("html lang %q", lang)
	}
	for sel, want := range map[string]string{
		card + " .name": "豚骨拉面",
		card + " .sub":  "豚骨ラーメン",
		card + " .desc": "Rich pork-bone broth, thin noodles",
		card + ` .allergen[data-allergen="pork"]`: "猪肉",
		"#nav-menu": "菜单",
		`#category-tabs button[data-category="noodles"]`: "面类",
		`#category-tabs button[data-category="drinks"]`:  "饮品",
		`[data-item-id="shoyu"] .name`:                   "Shoyu ramen", // no Chinese name: English
	} {
		if got := zh.text(sel); got != want {
			t.Errorf("zh %s: %q, want %q", sel, got, want)
		}
	}
	if got := eval[string](zh, `[...document.querySelectorAll('#lang-select option')].map(o => o.value + '=' + o.textContent).join(',')`); got != "ja=日本語,en=English,zh-Hans=简体中文,ko=한국어" {
		t.Errorf("switcher offers %q", got)
	}
	zh.screenshot("guest-menu-zh-phone")
	zh.viewport(tabletW, tabletH)
	zh.screenshot("guest-menu-zh-tablet")
	zh.viewport(phoneW, phoneH)

	// The switcher: Korean, then the cart in Korean.
	chooseLang(zh, "ko")
	zh.waitFor("Korean", `document.querySelector('#nav-menu').textContent === '메뉴'`, 5*time.Second)
	if got := zh.text(card + " .name"); got != "돈코츠 라멘" {
		t.Errorf("ko name %q", got)
	}
	zh.click(`button[data-menu-id="oolong"]`)
	zh.click("#nav-cart")
	zh.waitVisible("#cart-confirm")
	if got := zh.text("#cart-confirm"); got != "주문하기" || !strings.Contains(zh.text("#cart-lines"), "우롱차") {
		t.Errorf("Korean cart: %q / %q", got, zh.text("#cart-lines"))
	}
	zh.screenshot("guest-cart-ko-phone")
	zh.click("#cart-confirm")
	zh.waitVisible("#screen-done")
	zh.screenshot("guest-done-ko-phone")

	// Guest strings are text: a name with markup shows as written.
	if r := s.staff(n, "PUT", "/api/staff/menu/oolong", map[string]any{"name": "烏龍茶", "nameEn": "Oolong tea", "category": "drinks", "price": 300, "sortOrder": 31,
		"names": map[string]string{"ko": `<img src=x onerror="window.pwned=1">`}, "description": "<b>bold</b>"}); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	s.c.WaitConverged(10 * time.Second)
	zh.click("#done-menu")
	zh.do(chromedp.Reload())
	zh.waitVisible(`[data-item-id="oolong"]`)
	if got := zh.text(`[data-item-id="oolong"] .name`); got != `<img src=x onerror="window.pwned=1">` {
		t.Errorf("a name with markup shows as %q", got)
	}
	if eval[bool](zh, `!!window.pwned || !!document.querySelector('#menu-list b')`) {
		t.Fatal("menu data was rendered as HTML")
	}
}

// The staff console edits an item's other-language names, descriptions,
// allergens and picture, and its category's names; the guest API then
// carries them.
func TestStaffEditsMenuContent(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	dir := t.TempDir()
	pic := filepath.Join(dir, "ramen.jpg")
	if err := os.WriteFile(pic, picture(t, 800, 600), 0o644); err != nil {
		t.Fatal(err)
	}
	st := b.open("staff", s.url((n+1)%3)+"/staff/", phoneW, phoneH)
	st.login()
	st.click(`#tabs button[data-tab="menu"]`)
	st.editMenuItem("tonkotsu")
	st.waitFor("the form filled", `!!document.querySelector('#menu-name-zh-Hans')`, 5*time.Second)
	st.typeInto("#menu-name-zh-Hans", "豚骨拉面")
	st.typeInto("#menu-name-ko", "돈코츠 라멘")
	st.typeInto("#menu-description", "濃厚な豚骨スープ")
	st.typeInto("#menu-description-en", "Rich pork broth")
	for _, a := range []string{"wheat", "pork"} {
		st.click(fmt.Sprintf(`#menu-allergens input[value=%q]`, a))
	}
	st.typeInto("#category-name-zh-Hans", "面类")
	st.do(chromedp.SetUploadFiles(chromedp.CSS("#menu-picture"), []string{pic}))
	st.waitVisible("#menu-picture-preview")
	st.scrollBelowBars("#menu-content")
	st.screenshot("staff-menu-content-phone")
	st.viewport(tabletW, tabletH)
	st.scrollBelowBars("#menu-content")
	st.screenshot("staff-menu-content-tablet")
	st.click("#menu-save")
	st.waitFor("the saved picture shown", `(() => { const i = document.querySelector('#menu-picture-preview'); return !!i && i.src.includes('/api/images/') && i.complete && i.naturalWidth > 0; })()`, 15*time.Second)

	sess := s.openSession(n, "E1")
	r := s.call((n+2)%3, "GET", "/api/guest/sessions/"+sess.SessionID+"/menu", map[string]string{"X-Session-PIN": sess.PIN}, nil)
	var menu struct {
		Items []struct {
			MenuID, Description, DescriptionEn string
			Names                              map[string]string
			Allergens                          []string
			ImageURL                           *string
		}
		Categories map[string]map[string]string
	}
	r.decode(t, &menu)
	found := false
	for _, it := range menu.Items {
		if it.MenuID != "tonkotsu" {
			continue
		}
		found = true
		if it.Names["zh-Hans"] != "豚骨拉面" || it.Names["ko"] != "돈코츠 라멘" || it.Description != "濃厚な豚骨スープ" ||
			it.DescriptionEn != "Rich pork broth" || fmt.Sprint(it.Allergens) != "[wheat pork]" || it.ImageURL == nil {
			t.Errorf("saved item %+v", it)
		}
	}
	if !found || menu.Categories["noodles"]["zh-Hans"] != "面类" {
		t.Errorf("guest menu: found %v, categories %v", found, menu.Categories)
	}
}
