package setup

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders"
)

// The console joins only a box it listed (and so pinned by the
// fingerprint it announced): an id nobody listed, such as a rogue box's
// that announced itself after the list, is refused before any claim.
func TestConsoleJoinsOnlyListedBoxes(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), slog.New(slog.DiscardHandler))
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	req := httptest.NewRequest(http.MethodPost, "/api/staff/cluster/setup-boxes/rogue-box/join", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "BOX_NOT_FOUND") {
		t.Fatalf("join of an unlisted box: %d %s", rec.Code, rec.Body)
	}
	if p := k.Progress(); p.State != "idle" {
		t.Fatalf("progress after a refused join: %+v", p)
	}
}

// A member without the CA key (a store made by hand with init, the key
// not copied) refuses the join at once with NO_CA_KEY, in words, before
// any claim: not "unreachable" after trying.
func TestConsoleJoinNeedsTheCAKey(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), slog.New(slog.DiscardHandler))
	k.found["box-1"] = Candidate{Found: Found{ID: "box-1", Addr: "127.0.0.1:1", Fingerprint: "00"}}
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	req := httptest.NewRequest(http.MethodPost, "/api/staff/cluster/setup-boxes/box-1/join", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"reasonCode":"NO_CA_KEY"`) || !strings.Contains(rec.Body.String(), "ca-key.pem") {
		t.Fatalf("join without the CA key: %d %s", rec.Code, rec.Body)
	}
	if p := k.Progress(); p.State != "idle" {
		t.Fatalf("progress after a refused join: %+v", p)
	}
}

// A failed join's progress carries its reason in words, in the language
// the console asked for, beside the code.
func TestConsoleJoinProgressInWords(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), nil)
	k.progress = JoinProgress{State: "failed", Error: "SETUP_CODE_WRONG", Detail: "box refused (403 SETUP_CODE_WRONG): wrong setup code"}
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	for _, lang := range []string{"ja", "en"} {
		req := httptest.NewRequest(http.MethodGet, "/api/staff/cluster/join", nil)
		req.Header.Set("Accept-Language", lang)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		var p JoinProgress
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Message != httpapi.Message("SETUP_CODE_WRONG", lang == "en") || p.Error != "SETUP_CODE_WRONG" {
			t.Errorf("%s: %d %s", lang, rec.Code, rec.Body)
		}
	}
}
