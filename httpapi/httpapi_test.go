package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

func answer(t *testing.T, lang string, r Refusal) (*httptest.ResponseRecorder, Error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Language", lang)
	rec := httptest.NewRecorder()
	if err := Write(echo.New().NewContext(req, rec), r); err != nil {
		t.Fatal(err)
	}
	var body Error
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return rec, body
}

// Every refusal is the API.md body; Retry-After is whole seconds rounded
// up, and present on a 503 even when the caller gave none.
func TestWriteRefusal(t *testing.T) {
	rec, b := answer(t, "en-US", Refusal{Status: http.StatusConflict, Code: "OUT_OF_STOCK", RetryAfter: 1500 * time.Millisecond, SKUs: []string{"a"}})
	if rec.Code != http.StatusConflict || b.Allowed || b.ReasonCode != "OUT_OF_STOCK" || b.Message != "Some items are sold out." ||
		len(b.SKUs) != 1 || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("got %d %+v Retry-After %q", rec.Code, b, rec.Header().Get("Retry-After"))
	}
	rec, b = answer(t, "ja", Refusal{Status: http.StatusServiceUnavailable, Code: "NO_QUORUM"})
	if b.Message != messages["NO_QUORUM"][0] || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %+v Retry-After %q", b, rec.Header().Get("Retry-After"))
	}
	_, b = answer(t, "ja", Refusal{Status: http.StatusConflict, Code: "LAST_VOTER", Detail: "n1 is the last voter"})
	if b.Message != messages["LAST_VOTER"][0]+"（n1 is the last voter）" {
		t.Fatalf("detail in Japanese: %q", b.Message)
	}
	_, b = answer(t, "en", Refusal{Status: http.StatusConflict, Code: "LAST_VOTER", Detail: "n1 is the last voter"})
	if b.Message != "n1 is the last voter" {
		t.Fatalf("detail in English: %q", b.Message)
	}
	_, b = answer(t, "en", Refusal{Status: http.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "Token expired."})
	if b.Message != "Token expired." || b.ReasonCode != "UNAUTHORIZED" {
		t.Fatalf("own message: %+v", b)
	}
	_, b = answer(t, "en", Refusal{Status: http.StatusBadRequest, Code: "NO_SUCH_CODE"})
	if b.Message != "The request was refused (NO_SUCH_CODE)." {
		t.Fatalf("unknown code: %q", b.Message)
	}
}

// Every code in the table has a Japanese text; only the membership codes,
// which always carry a detail, may lack an English one.
func TestMessageTableComplete(t *testing.T) {
	for code, m := range messages {
		if m[0] == "" {
			t.Errorf("%s: no Japanese text", code)
		}
	}
}
