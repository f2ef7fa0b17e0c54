// Package httpapi is how every endpoint of the box and the domain answers
// a refusal: the API.md error body with a reason code and a message from
// the one table, and strict JSON request bodies.
package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Error is the error body every endpoint answers with.
type Error struct {
	Allowed    bool     `json:"allowed"`
	ReasonCode string   `json:"reasonCode"`
	Message    string   `json:"message"`
	SKUs       []string `json:"skus,omitempty"`
	// Field names the request field a 400 is about (API.md).
	Field string `json:"field,omitempty"`
	// Details are the specifics for a technician, in the words of what
	// refused (Firestore's, for a Cloud page key).
	Details string `json:"details,omitempty"`
}

// Refusal is one error answer.
type Refusal struct {
	Status     int
	Code       string
	RetryAfter time.Duration
	// SKUs name the items an OUT_OF_STOCK refusal is about.
	SKUs []string
	// Field names the request field a 400 is about.
	Field string
	// Detail is the specifics (in English, e.g. a membership refusal's
	// reason): it follows the Japanese text and is the English one.
	Detail string
	// Message, when set, is the whole text, already in the caller's
	// language (staff auth words each token failure itself).
	Message string
	// Details are answered apart from the message (Error.Details).
	Details string
}

// English reports whether the caller asked for English (en, en-US, …).
func English(c echo.Context) bool {
	al := strings.TrimSpace(c.Request().Header.Get("Accept-Language"))
	return strings.HasPrefix(strings.ToLower(al), "en")
}

// Write answers r. Retry-After (whole seconds, rounded up) goes on every
// 429 and 503 and on the 409s a client should simply retry.
func Write(c echo.Context, r Refusal) error {
	retryAfter := r.RetryAfter
	switch r.Code {
	case "DUPLICATE_IDEMPOTENCY_KEY", "SESSION_ORDER_IN_PROGRESS", "DUPLICATE_PAYLOAD", "SESSION_BUSY":
		retryAfter = max(retryAfter, time.Second)
	}
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		retryAfter = max(retryAfter, time.Second)
	}
	if retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	en := English(c)
	msg := Message(r.Code, en)
	if r.Message != "" {
		msg = r.Message
	} else if r.Detail != "" {
		if en {
			msg = r.Detail
		} else {
			msg += "（" + r.Detail + "）"
		}
	}
	return c.JSON(r.Status, Error{Allowed: false, ReasonCode: r.Code, Message: msg, SKUs: r.SKUs, Field: r.Field, Details: r.Details})
}

// Fail answers status with code and its message.
func Fail(c echo.Context, status int, code string) error {
	return Write(c, Refusal{Status: status, Code: code})
}

// BadBody answers a request body that did not decode: 413 BODY_TOO_LARGE
// past the body limit, else 400 with code.
func BadBody(c echo.Context, err error, code string) error {
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
		return Fail(c, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE")
	}
	return Fail(c, http.StatusBadRequest, code)
}

// DecodeBody reads the request body strictly into v (DecodeStrict).
func DecodeBody(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	return DecodeStrict(body, v)
}

// DecodeStrict parses one JSON value into v: invalid UTF-8, unknown
// fields at any level, wrong types and trailing data are errors.
func DecodeStrict(body []byte, v any) error {
	if !utf8.Valid(body) { // encoding/json would quietly turn it into U+FFFD
		return errors.New("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
