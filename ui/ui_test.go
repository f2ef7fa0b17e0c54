package ui

import (
	"bytes"
	"encoding/json"
	"image/png"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func newServer() *echo.Echo {
	e := echo.New()
	Register(e)
	e.GET("/api/staff/qr", QRHandler)
	return e
}

func do(e *echo.Echo, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestRegisterServesTheApps(t *testing.T) {
	e := newServer()
	cases := []struct {
		target, contentType, contains string
	}{
		{"/guest/?s=abc", "text/html; charset=utf-8", `src="/guest/guest.js"`},
		{"/guest/index.html", "text/html; charset=utf-8", `id="pin-input"`},
		{"/guest/guest.js", "text/javascript; charset=utf-8", "createOrderSdk"},
		{"/kitchen/", "text/html; charset=utf-8", `id="conn-status"`},
		{"/kitchen/kitchen.js", "text/javascript; charset=utf-8", "EventSource"},
		{"/staff/", "text/html; charset=utf-8", `id="open-session-submit"`},
		{"/staff/staff.js", "text/javascript; charset=utf-8", "checkout/begin"},
		{"/assets/order-sdk.js", "text/javascript; charset=utf-8", "export function createOrderSdk"},
		{"/assets/style.css", "text/css; charset=utf-8", ":root"},
		{"/assets/icon.svg", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		rec := do(e, http.MethodGet, c.target, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d", c.target, rec.Code)
			continue
		}
		if got := rec.Header().Get("Content-Type"); got != c.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", c.target, got, c.contentType)
		}
		if got := rec.Header().Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", c.target, got)
		}
		if rec.Header().Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", c.target)
		}
		if !strings.Contains(rec.Body.String(), c.contains) {
			t.Errorf("GET %s: body lacks %q", c.target, c.contains)
		}
	}
}

func TestRedirects(t *testing.T) {
	e := newServer()
	for target, want := range map[string]string{
		"/":              "/staff/",
		"/guest?s=abc":   "/guest/?s=abc",
		"/kitchen":       "/kitchen/",
		"/staff":         "/staff/",
		"/guest?s=a&x=1": "/guest/?s=a&x=1",
	} {
		rec := do(e, http.MethodGet, target, nil)
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != want {
			t.Errorf("GET %s: %d Location %q, want 302 %q", target, rec.Code, rec.Header().Get("Location"), want)
		}
	}
}

func TestNotFoundAndNoEscape(t *testing.T) {
	e := newServer()
	for _, target := range []string{
		"/assets/nope.js",
		"/guest/../staff/index.html",
		"/guest/%2e%2e/staff/index.html",
		"/guest/..%2fstaff/index.html",
		"/assets/../../ui.go",
		"/guest/nested/",
	} {
		rec := do(e, http.MethodGet, target, nil)
		if rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "open-session-submit") {
			t.Errorf("GET %s served the staff page from the guest tree", target)
		}
		if rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "package ui") {
			t.Errorf("GET %s served Go source", target)
		}
	}
	if rec := do(e, http.MethodGet, "/assets/nope.js", nil); rec.Code != http.StatusNotFound {
		t.Errorf("missing file: %d, want 404", rec.Code)
	}
}

func TestConditionalAndHead(t *testing.T) {
	e := newServer()
	first := do(e, http.MethodGet, "/assets/order-sdk.js", nil)
	etag := first.Header().Get("ETag")
	again := do(e, http.MethodGet, "/assets/order-sdk.js", map[string]string{"If-None-Match": etag})
	if again.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", again.Code)
	}
	head := do(e, http.MethodHead, "/guest/", nil)
	if head.Code != http.StatusOK || head.Body.Len() != 0 {
		t.Errorf("HEAD /guest/: %d with %d body bytes", head.Code, head.Body.Len())
	}
}

// ---------------------------------------------------------------- QR

func TestQRHandler(t *testing.T) {
	e := newServer()
	rec := do(e, http.MethodGet, "/api/staff/qr?text="+urlQuery("http://192.168.1.10:8080/guest/?s=abcDEF123_-"), nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "image/png" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	img, err := png.Decode(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != qrSize || b.Dy() != qrSize {
		t.Errorf("size %v, want %dx%d", b, qrSize, qrSize)
	}

	// 512 characters is the limit, counted as characters, not bytes
	if rec := do(e, http.MethodGet, "/api/staff/qr?text="+urlQuery(strings.Repeat("注", MaxQRText)), nil); rec.Code != http.StatusOK {
		t.Errorf("512 Japanese characters: %d %s", rec.Code, rec.Body.String())
	}
}

func TestQRHandlerRejects(t *testing.T) {
	e := newServer()
	for name, target := range map[string]string{
		"missing":   "/api/staff/qr",
		"empty":     "/api/staff/qr?text=",
		"too long":  "/api/staff/qr?text=" + strings.Repeat("a", MaxQRText+1),
		"bad utf-8": "/api/staff/qr?text=%ff%fe",
	} {
		rec := do(e, http.MethodGet, target, nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, rec.Code)
			continue
		}
		var body struct {
			Allowed    *bool  `json:"allowed"`
			ReasonCode string `json:"reasonCode"`
			Message    string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s: body %q: %v", name, rec.Body.String(), err)
			continue
		}
		if body.Allowed == nil || *body.Allowed || body.ReasonCode != "INVALID_QR_TEXT" || body.Message == "" {
			t.Errorf("%s: body %+v", name, body)
		}
	}
	rec := do(e, http.MethodGet, "/api/staff/qr", map[string]string{"Accept-Language": "en-US,en;q=0.9,ja;q=0.8"})
	if !strings.Contains(rec.Body.String(), "characters") {
		t.Errorf("English message expected: %s", rec.Body.String())
	}
	rec = do(e, http.MethodGet, "/api/staff/qr", nil)
	if !strings.Contains(rec.Body.String(), "文字") {
		t.Errorf("Japanese message expected by default: %s", rec.Body.String())
	}
}

func TestPrefersEnglish(t *testing.T) {
	for h, want := range map[string]bool{
		"":                         false,
		"en":                       true,
		"en-US":                    true,
		"EN-gb":                    true,
		"ja":                       false,
		"ja-JP,ja;q=0.9,en;q=0.8":  false,
		"en-US,en;q=0.9,ja;q=0.8":  true,
		"ja;q=0.5, en;q=0.9":       true,
		"eng":                      false,
		"fr-FR,fr;q=0.9,en;q=0.8":  false,
		"en;q=0":                   false,
		"*":                        false,
		" en-US ; q=1 , ja;q=0.1 ": true,
	} {
		if got := prefersEnglish(h); got != want {
			t.Errorf("prefersEnglish(%q) = %v, want %v", h, got, want)
		}
	}
}

func urlQuery(s string) string {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	q := r.URL.Query()
	q.Set("x", s)
	return strings.TrimPrefix(q.Encode(), "x=")
}

// ---------------------------------------------------------------- the files themselves

func staticFiles(t *testing.T, ext string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ext {
			return err
		}
		b, err := fs.ReadFile(static, p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no %s files", ext)
	}
	return out
}

var (
	scriptTag    = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inlineEvent  = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	styleAttr    = regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`)
	styleTag     = regexp.MustCompile(`(?i)<style\b`)
	srcHref      = regexp.MustCompile(`(?i)\s(?:src|href)\s*=\s*"([^"]*)"`)
	jsImport     = regexp.MustCompile(`(?m)^\s*import\s[^'"]*['"]([^'"]+)['"]`)
	i18nAttr     = regexp.MustCompile(`data-i18n(?:-[a-z-]+)?="([^"]+)"`)
	i18nKeyDef   = regexp.MustCompile(`(?m)^\s*'([a-z]+(?:\.[A-Za-z0-9_]+)+)':`)
	i18nKeyUse   = regexp.MustCompile(`(?:\bT\.t\(|\[T, |\bT\.put\([^,()]+, )'([^']+)'`)
	forbiddenJS  = regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|\.style\.|setAttribute\('style'`)
	externalURLs = regexp.MustCompile(`(?i)(?:src|href|from)\s*=?\s*["'](?:https?:)?//`)
)

// The server sends a CSP of default-src 'self'; script-src 'self';
// style-src 'self'. Anything inline would be blocked in the browser, so it
// must not be in the files in the first place; nor any CDN.
func TestPagesFollowTheCSP(t *testing.T) {
	for name, html := range staticFiles(t, ".html") {
		for _, m := range scriptTag.FindAllStringSubmatch(html, -1) {
			if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
				t.Errorf("%s: inline <script>: %.80s", name, m[0])
			}
		}
		if loc := inlineEvent.FindString(html); loc != "" {
			t.Errorf("%s: inline event handler: %.80s", name, loc)
		}
		if loc := styleAttr.FindString(html); loc != "" {
			t.Errorf("%s: style attribute: %.80s", name, loc)
		}
		if styleTag.MatchString(html) {
			t.Errorf("%s: <style> block", name)
		}
		if externalURLs.MatchString(html) {
			t.Errorf("%s: external URL", name)
		}
	}
	for name, js := range staticFiles(t, ".js") {
		if loc := forbiddenJS.FindString(js); loc != "" {
			t.Errorf("%s: uses %s (build DOM with textContent and classes)", name, loc)
		}
		if externalURLs.MatchString(js) {
			t.Errorf("%s: external URL", name)
		}
	}
}

// Every script, stylesheet, icon and module import points at a file that
// is embedded.
func TestLinksResolve(t *testing.T) {
	exists := func(p string) bool { _, ok := files[strings.TrimPrefix(p, "/")]; return ok }
	for name, html := range staticFiles(t, ".html") {
		for _, m := range srcHref.FindAllStringSubmatch(html, -1) {
			ref := m[1]
			if strings.HasPrefix(ref, "/api/") || ref == "" || strings.HasPrefix(ref, "#") {
				continue
			}
			if !strings.HasPrefix(ref, "/") {
				ref = "/" + path.Join(path.Dir(name), ref)
			}
			if strings.HasSuffix(ref, "/") {
				ref += "index.html"
			}
			if !exists(ref) {
				t.Errorf("%s: %s is not embedded", name, m[1])
			}
		}
	}
	for name, js := range staticFiles(t, ".js") {
		for _, m := range jsImport.FindAllStringSubmatch(js, -1) {
			ref := m[1]
			if !strings.HasPrefix(ref, "/") {
				ref = "/" + path.Join(path.Dir(name), ref)
			}
			if !exists(ref) {
				t.Errorf("%s: import %s is not embedded", name, m[1])
			}
		}
	}
}

// Every text key a page or script uses is defined, in Japanese and in
// English (the guest app's own keys also in Chinese and Korean).
func TestTranslationsComplete(t *testing.T) {
	js := staticFiles(t, ".js")
	html := staticFiles(t, ".html")
	common := keyCounts(js["assets/i18n.js"])
	dicts := map[string][]string{ // app folder → dictionary files besides i18n.js
		"guest":   {"guest/guest.js", "guest/strings.js"},
		"kitchen": {"kitchen/kitchen.js", "assets/calls.js", "assets/health.js"},
		"staff":   {"staff/strings.js", "staff/reports.js", "assets/calls.js", "assets/health.js", "staff/content-editor.js", "staff/options-editor.js", "staff/menucsv.js", "staff/cloud.js", "staff/update.js", "staff/backups.js"},
		"setup":   {"setup/strings.js", "assets/health.js"},
	}
	langs := map[string]int{"guest": 4, "kitchen": 2, "staff": 2, "setup": 2}
	for app, files := range dicts {
		defined := map[string]int{}
		for k, n := range common {
			defined[k] += n
		}
		for _, f := range files {
			for k, n := range keyCounts(js[f]) {
				defined[k] += n
			}
		}
		for k, n := range defined {
			// A common key the app does not translate further stays in ja and en.
			if n != langs[app] && !(n == 2 && n == common[k]) {
				t.Errorf("%s: key %q defined %d times, want once in each of %d languages", app, k, n, langs[app])
			}
		}
		var used []string
		for name, src := range html {
			if strings.HasPrefix(name, app+"/") {
				for _, m := range i18nAttr.FindAllStringSubmatch(src, -1) {
					used = append(used, m[1])
				}
			}
		}
		for name, src := range js {
			if strings.HasPrefix(name, app+"/") {
				for _, m := range i18nKeyUse.FindAllStringSubmatch(src, -1) {
					if !strings.HasSuffix(m[1], ".") {
						used = append(used, m[1])
					}
				}
			}
		}
		for _, k := range used {
			if defined[k] == 0 {
				t.Errorf("%s: text key %q is used but not defined", app, k)
			}
		}
	}
}

func keyCounts(src string) map[string]int {
	out := map[string]int{}
	for _, m := range i18nKeyDef.FindAllStringSubmatch(src, -1) {
		out[m[1]]++
	}
	return out
}
