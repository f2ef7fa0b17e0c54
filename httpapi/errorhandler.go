package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
)

// ErrorHandler answers what a handler or echo itself returns as an error
// with a reason code, never echo's own body or a stack trace: echo's
// routing and body errors by their status (404 NOT_FOUND, 405
// METHOD_NOT_ALLOWED, 413 BODY_TOO_LARGE, 401 UNAUTHORIZED, other 4xx
// BAD_REQUEST, 5xx INTERNAL, logged), and any other error through other
// (nil: 500 INTERNAL, logged). Both servers use it: a member's (node) and
// a box's in setup mode (setup).
func ErrorHandler(log *slog.Logger, other func(echo.Context, error) error) echo.HTTPErrorHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	internal := func(c echo.Context, err error) error {
		log.Error("request failed", "path", c.Path(), "error", err)
		return Fail(c, http.StatusInternalServerError, "INTERNAL")
	}
	if other == nil {
		other = internal
	}
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var he *echo.HTTPError
		if !errors.As(err, &he) {
			other(c, err)
			return
		}
		switch {
		case he.Code == http.StatusNotFound:
			Fail(c, he.Code, "NOT_FOUND")
		case he.Code == http.StatusMethodNotAllowed:
			Fail(c, he.Code, "METHOD_NOT_ALLOWED")
		case he.Code == http.StatusRequestEntityTooLarge:
			Fail(c, he.Code, "BODY_TOO_LARGE")
		case he.Code == http.StatusUnauthorized:
			Fail(c, he.Code, "UNAUTHORIZED")
		case he.Code >= 500:
			internal(c, err)
		default:
			Fail(c, he.Code, "BAD_REQUEST")
		}
	}
}
