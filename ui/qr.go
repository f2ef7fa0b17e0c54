package ui

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"

	"masterorder/httpapi"
)

// MaxQRText is the longest text QRHandler encodes, in characters.
const MaxQRText = 512

// qrSize is the PNG edge in pixels: sharp on a tablet, readable by a phone
// camera from across a table.
const qrSize = 320

// QRHandler answers GET /api/staff/qr?text=... with a PNG QR code of text
// (1 to MaxQRText characters of valid UTF-8). Anything else is
// 400 INVALID_QR_TEXT with the usual error body. The server mounts it
// behind staff auth; the staff console loads it as an <img>, so that auth
// has to accept the login cookie.
func QRHandler(c echo.Context) error {
	text := c.QueryParam("text")
	n := utf8.RuneCountInString(text)
	if n == 0 || n > MaxQRText || !utf8.ValidString(text) {
		msg := httpapi.Message("INVALID_QR_TEXT", prefersEnglish(c.Request().Header.Get("Accept-Language")))
		return c.JSON(http.StatusBadRequest, map[string]any{
			"allowed":    false,
			"reasonCode": "INVALID_QR_TEXT",
			"message":    msg,
		})
	}
	png, err := qrcode.Encode(text, qrcode.Medium, qrSize)
	if err != nil {
		// Cannot happen within 512 characters; answer as bad input anyway
		// rather than a 5xx.
		return c.JSON(http.StatusBadRequest, map[string]any{
			"allowed":    false,
			"reasonCode": "INVALID_QR_TEXT",
			"message":    err.Error(),
		})
	}
	// The guest URL in it is as good as a key to the table: never cache.
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "image/png", png)
}

// prefersEnglish reads an Accept-Language header as browsers send it
// ("en-US,en;q=0.9,ja;q=0.8"): English when the most preferred language
// is en or en-*, Japanese otherwise.
func prefersEnglish(header string) bool {
	type tag struct {
		lang string
		q    float64
	}
	var tags []tag
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(strings.TrimSpace(part), ";")
		lang := strings.ToLower(strings.TrimSpace(fields[0]))
		if lang == "" {
			continue
		}
		q := 1.0
		for _, p := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		tags = append(tags, tag{lang, q})
	}
	sort.SliceStable(tags, func(i, j int) bool { return tags[i].q > tags[j].q })
	if len(tags) == 0 || tags[0].q <= 0 {
		return false
	}
	l := tags[0].lang
	return l == "en" || strings.HasPrefix(l, "en-")
}
