package setup

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

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
