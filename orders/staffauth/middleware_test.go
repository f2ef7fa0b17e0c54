package staffauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

type harness struct {
	e       *echo.Echo
	auth    *Auth
	iss     *Issuer
	clk     *fakeClock
	mu      sync.Mutex
	revoked map[string]bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{clk: newClock(), revoked: map[string]bool{}}
	h.iss = &Issuer{Secret: testSecret, Now: h.clk.Now}
	auth, err := NewAuth(h.iss, func(id string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.revoked[id]
	})
	if err != nil {
		t.Fatal(err)
	}
	h.auth = auth
	h.e = echo.New()
	h.e.POST("/api/staff/login", func(c echo.Context) error {
		tok, _, exp := h.iss.Issue()
		if err := auth.SetLoginCookies(c, tok, exp); err != nil {
			return err
		}
		return c.JSON(200, map[string]string{"token": tok})
	})
	g := h.e.Group("/api/staff", auth.Middleware())
	whoami := func(c echo.Context) error {
		cl, ok := ClaimsFrom(c)
		if !ok {
			return c.String(500, "no claims")
		}
		return c.String(200, cl.ID)
	}
	g.GET("/menu", whoami)
	g.PUT("/menu/:id", whoami)
	h.e.GET("/api/kitchen/stream", whoami, auth.StreamMiddleware())
	g.POST("/logout", func(c echo.Context) error {
		cl, _ := ClaimsFrom(c)
		h.mu.Lock()
		h.revoked[cl.ID] = true
		h.mu.Unlock()
		auth.ClearCookies(c)
		return c.NoContent(http.StatusNoContent)
	})
	return h
}

type req struct {
	method, path string
	header       map[string]string
	cookies      []*http.Cookie
}

func (h *harness) do(r req) *httptest.ResponseRecorder {
	hr := httptest.NewRequest(r.method, r.path, strings.NewReader("{}"))
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	for _, c := range r.cookies {
		hr.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, hr)
	return rec
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func wantDenied(t *testing.T, name string, rec *httptest.ResponseRecorder, status int, reason string) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("%s: status %d, want %d (body %s)", name, rec.Code, status, rec.Body)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Errorf("%s: body %q is not JSON", name, rec.Body)
		return
	}
	if body["allowed"] != false || body["reasonCode"] != reason || body["message"] == "" || len(body) != 3 {
		t.Errorf("%s: body %v", name, body)
	}
}

func TestMiddlewareRejectsBadTokens(t *testing.T) {
	h := newHarness(t)
	good, _, _ := h.iss.Issue()
	foreign, _, _ := (&Issuer{Secret: []byte(strings.Repeat("k", 32)), Now: h.clk.Now}).Issue()
	enc, mac, _ := strings.Cut(good, ".")
	tampered := enc[:4] + flipB64(enc[4:5]) + enc[5:] + "." + mac

	for name, hdr := range map[string]map[string]string{
		"missing":         nil,
		"empty bearer":    {"Authorization": "Bearer "},
		"basic scheme":    {"Authorization": "Basic dXNlcjpwYXNz"},
		"malformed":       bearer("not-a-token"),
		"wrong secret":    bearer(foreign),
		"changed payload": bearer(tampered),
	} {
		rec := h.do(req{method: "GET", path: "/api/staff/menu", header: hdr})
		wantDenied(t, name, rec, 401, ReasonUnauthorized)
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", name)
		}
	}
	if rec := h.do(req{method: "GET", path: "/api/staff/menu", header: bearer(good)}); rec.Code != 200 {
		t.Fatalf("good token: %d %s", rec.Code, rec.Body)
	}
	h.clk.Advance(12 * time.Hour)
	wantDenied(t, "expired", h.do(req{method: "GET", path: "/api/staff/menu", header: bearer(good)}), 401, ReasonUnauthorized)
}

func TestMiddlewareMessagesFollowAcceptLanguage(t *testing.T) {
	h := newHarness(t)
	msg := func(lang string) string {
		rec := h.do(req{method: "GET", path: "/api/staff/menu", header: map[string]string{"Accept-Language": lang}})
		var body struct{ Message string }
		json.Unmarshal(rec.Body.Bytes(), &body)
		return body.Message
	}
	ja := msg("")
	for _, lang := range []string{"ja", "ja-JP,en;q=0.8", "fr", "eng"} {
		if got := msg(lang); got != ja {
			t.Errorf("%q: %q, want the Japanese message", lang, got)
		}
	}
	if !strings.Contains(ja, "ログイン") {
		t.Errorf("Japanese message %q", ja)
	}
	for _, lang := range []string{"en", "en-US", "EN-gb,ja;q=0.5", "en;q=0.9"} {
		if got := msg(lang); got == ja || !strings.Contains(got, "login") {
			t.Errorf("%q: %q, want English", lang, got)
		}
	}
}

func TestMiddlewareRevocation(t *testing.T) {
	h := newHarness(t)
	tok, _, _ := h.iss.Issue()
	other, _, _ := h.iss.Issue()
	if rec := h.do(req{method: "POST", path: "/api/staff/logout", header: bearer(tok)}); rec.Code != 204 {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	wantDenied(t, "revoked", h.do(req{method: "GET", path: "/api/staff/menu", header: bearer(tok)}), 401, ReasonUnauthorized)
	if rec := h.do(req{method: "GET", path: "/api/staff/menu", header: bearer(other)}); rec.Code != 200 {
		t.Errorf("another token was revoked too: %d", rec.Code)
	}
}

func login(t *testing.T, h *harness) (token string, staff, csrf *http.Cookie) {
	t.Helper()
	rec := h.do(req{method: "POST", path: "/api/staff/login"})
	if rec.Code != 200 {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	var body struct{ Token string }
	json.Unmarshal(rec.Body.Bytes(), &body)
	for _, c := range rec.Result().Cookies() {
		switch c.Name {
		case CookieToken:
			staff = c
		case CookieCSRF:
			csrf = c
		}
	}
	if staff == nil || csrf == nil {
		t.Fatalf("login cookies missing: %v", rec.Header()["Set-Cookie"])
	}
	return body.Token, staff, csrf
}

func TestLoginCookies(t *testing.T) {
	h := newHarness(t)
	tok, staff, csrf := login(t, h)
	if staff.Value != tok || !staff.HttpOnly || staff.SameSite != http.SameSiteStrictMode || staff.Path != "/" || staff.MaxAge != 12*3600 {
		t.Errorf("mo_staff cookie %+v", staff)
	}
	cl, err := h.iss.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if csrf.Value != h.iss.CSRFToken(cl.ID) || csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode || csrf.Path != "/" || csrf.MaxAge != 12*3600 {
		t.Errorf("mo_csrf cookie %+v", csrf)
	}
	if staff.Secure || csrf.Secure {
		t.Error("Secure set on a plain-HTTP request")
	}

	rec := h.do(req{method: "POST", path: "/api/staff/logout",
		header:  map[string]string{HeaderCSRF: csrf.Value},
		cookies: []*http.Cookie{staff, csrf}})
	if rec.Code != 204 {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	cleared := 0
	for _, c := range rec.Result().Cookies() {
		if (c.Name == CookieToken || c.Name == CookieCSRF) && c.MaxAge < 0 && c.Value == "" {
			cleared++
		}
	}
	if cleared != 2 {
		t.Errorf("logout cleared %d cookies: %v", cleared, rec.Header()["Set-Cookie"])
	}
	if err := h.auth.SetLoginCookies(echo.New().NewContext(httptest.NewRequest("GET", "/", nil), httptest.NewRecorder()), "bogus", time.Now()); err == nil {
		t.Error("SetLoginCookies accepted a bogus token")
	}
}

func TestCSRF(t *testing.T) {
	h := newHarness(t)
	_, staff, csrf := login(t, h)
	_, _, otherCSRF := login(t, h)
	cookies := []*http.Cookie{staff, csrf}

	if rec := h.do(req{method: "GET", path: "/api/staff/menu", cookies: cookies}); rec.Code != 200 {
		t.Errorf("cookie GET: %d %s", rec.Code, rec.Body)
	}
	wantDenied(t, "cookie PUT without header", h.do(req{method: "PUT", path: "/api/staff/menu/ramen", cookies: cookies}), 403, ReasonCSRF)
	wantDenied(t, "cookie PUT with wrong header", h.do(req{method: "PUT", path: "/api/staff/menu/ramen", cookies: cookies,
		header: map[string]string{HeaderCSRF: "nope"}}), 403, ReasonCSRF)
	wantDenied(t, "cookie PUT with another login's value", h.do(req{method: "PUT", path: "/api/staff/menu/ramen", cookies: cookies,
		header: map[string]string{HeaderCSRF: otherCSRF.Value}}), 403, ReasonCSRF)
	if rec := h.do(req{method: "PUT", path: "/api/staff/menu/ramen", cookies: cookies,
		header: map[string]string{HeaderCSRF: csrf.Value}}); rec.Code != 200 {
		t.Errorf("cookie PUT with header: %d %s", rec.Code, rec.Body)
	}
	// The check compares with the value derived from the token, so a
	// forged mo_csrf cookie echoed in the header does not help.
	wantDenied(t, "matching forged cookie and header", h.do(req{method: "PUT", path: "/api/staff/menu/ramen",
		cookies: []*http.Cookie{staff, {Name: CookieCSRF, Value: "x"}},
		header:  map[string]string{HeaderCSRF: "x"}}), 403, ReasonCSRF)
	rec := h.do(req{method: "PUT", path: "/api/staff/menu/ramen", cookies: cookies, header: map[string]string{"Accept-Language": "en-US"}})
	if !strings.Contains(rec.Body.String(), "CSRF") {
		t.Errorf("English CSRF message: %s", rec.Body)
	}
}

func TestBearerAndQueryTokens(t *testing.T) {
	h := newHarness(t)
	tok, id, _ := h.iss.Issue()
	rec := h.do(req{method: "PUT", path: "/api/staff/menu/ramen", header: bearer(tok)})
	if rec.Code != 200 || rec.Body.String() != id {
		t.Errorf("bearer PUT without CSRF header: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do(req{method: "GET", path: "/api/kitchen/stream?token=" + tok}); rec.Code != 200 {
		t.Errorf("query token on the stream: %d %s", rec.Code, rec.Body)
	}
	// Anywhere else a token in the URL (which lands in logs and browser
	// history) opens nothing.
	wantDenied(t, "query token on a staff GET", h.do(req{method: "GET", path: "/api/staff/menu?token=" + tok}), 401, ReasonUnauthorized)
	wantDenied(t, "query token on PUT", h.do(req{method: "PUT", path: "/api/staff/menu/ramen?token=" + tok}), 401, ReasonUnauthorized)
	wantDenied(t, "bad query token", h.do(req{method: "GET", path: "/api/kitchen/stream?token=x." + tok}), 401, ReasonUnauthorized)
}

func TestCookieAuthIsCheckedBeforeCSRF(t *testing.T) {
	h := newHarness(t)
	_, staff, csrf := login(t, h)
	h.clk.Advance(13 * time.Hour)
	wantDenied(t, "expired cookie write", h.do(req{method: "PUT", path: "/api/staff/menu/ramen",
		cookies: []*http.Cookie{staff, csrf}}), 401, ReasonUnauthorized)
}

// flipB64 returns a different base64url character.
func flipB64(c string) string {
	if c == "A" {
		return "B"
	}
	return "A"
}
