package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Echo's own errors and a handler's plain errors reach the caller as a
// reason code with the status they mean; a plain error goes to the
// server's own mapping when it has one, else 500 INTERNAL with nothing of
// the error in the body.
func TestErrorHandler(t *testing.T) {
	errSecret := errors.New("open /var/lib/masterorder/fsm.db: secret detail")
	errMine := errors.New("mine")
	for _, withOther := range []bool{false, true} {
		e := echo.New()
		var other func(echo.Context, error) error
		if withOther {
			other = func(c echo.Context, err error) error {
				if errors.Is(err, errMine) {
					return Fail(c, http.StatusServiceUnavailable, "NO_QUORUM")
				}
				return Fail(c, http.StatusInternalServerError, "INTERNAL")
			}
		}
		e.HTTPErrorHandler = ErrorHandler(nil, other)
		e.Use(middleware.BodyLimit("1K"))
		e.POST("/body", func(c echo.Context) error {
			var v map[string]any
			return c.Bind(&v)
		})
		e.GET("/401", func(echo.Context) error { return echo.ErrUnauthorized })
		e.GET("/403", func(echo.Context) error { return echo.ErrForbidden })
		e.GET("/502", func(echo.Context) error { return echo.ErrBadGateway })
		e.GET("/plain", func(echo.Context) error { return errSecret })
		e.GET("/mine", func(echo.Context) error { return errMine })
		mineStatus, mineCode := http.StatusInternalServerError, "INTERNAL"
		if withOther {
			mineStatus, mineCode = http.StatusServiceUnavailable, "NO_QUORUM"
		}
		for _, tc := range []struct {
			method, path, body string
			status             int
			code               string
		}{
			{"GET", "/nowhere", "", 404, "NOT_FOUND"},
			{"DELETE", "/401", "", 405, "METHOD_NOT_ALLOWED"},
			{"POST", "/body", strings.Repeat("x", 2048), 413, "BODY_TOO_LARGE"},
			{"GET", "/401", "", 401, "UNAUTHORIZED"},
			{"GET", "/403", "", 403, "BAD_REQUEST"},
			{"GET", "/502", "", 500, "INTERNAL"},
			{"GET", "/plain", "", 500, "INTERNAL"},
			{"GET", "/mine", "", mineStatus, mineCode},
		} {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			var b Error
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || rec.Code != tc.status || b.ReasonCode != tc.code ||
				strings.Contains(rec.Body.String(), "secret") {
				t.Errorf("other=%v %s %s: %d %s, want %d %s", withOther, tc.method, tc.path, rec.Code, rec.Body, tc.status, tc.code)
			}
		}
	}
}
