// Package admission holds the pure parts of the guest-order gate: header
// parsing, the strict order decoder, cart normalization and the payload
// fingerprint. No I/O, so every piece is unit-tested and fuzzed.
package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"masterorder/httpapi"
)

// Limits from API.md.
const (
	MaxLines       = 50
	MaxQuantity    = 99
	MaxToppings    = 10
	MaxExpectedYen = 100_000_000
)

// The checks below are byte loops, not regular expressions: every node
// runs them for every id of every order (in the handler and in Apply's
// valid()), and the regexps were 2 % of a node's CPU. Their fuzz tests
// hold them to the patterns they replace.

// idOfLen reports whether s is min..max characters of [A-Za-z0-9_-].
func idOfLen(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isUUIDv4 matches ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$.
func isUUIDv4(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		case 14:
			if c != '4' {
				return false
			}
		case 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// ParseIdempotencyKey accepts a UUID v4 in any case, bare or in the quoted
// form of the IETF draft, and returns it lower-cased and unquoted.
func ParseIdempotencyKey(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	s = strings.ToLower(s)
	if !isUUIDv4(s) {
		return "", false
	}
	return s, true
}

// ValidClientID checks X-MasterOrder-Client-Id.
func ValidClientID(s string) bool {
	rest, ok := strings.CutPrefix(s, "guest-")
	return ok && idOfLen(rest, 8, 64)
}

// ValidID checks a menu, topping, table id or sku.
func ValidID(s string) bool { return idOfLen(s, 1, 64) }

// Line is one cart line as sent.
type Line struct {
	MenuID   string   `json:"menuId"`
	Quantity int      `json:"quantity"`
	Toppings []string `json:"toppings"`
	// Options and Note (lines.go) are omitted when empty, so a line
	// without them is the same command and fingerprint as before.
	Options map[string][]string `json:"options,omitempty"`
	Note    string              `json:"note,omitempty"`
}

// OrderRequest is the body of a guest (or staff) order.
type OrderRequest struct {
	Items         []Line `json:"items"`
	ExpectedTotal *int64 `json:"expectedTotal"`
	AllowRepeat   bool   `json:"allowRepeat"`
}

// ErrInvalidOrder is wrapped by every decode failure (400 INVALID_ORDER).
var ErrInvalidOrder = errors.New("invalid order")

// DecodeOrder parses the body strictly: unknown fields at any level,
// wrong types, trailing data, and out-of-range values are rejected.
func DecodeOrder(body []byte) (OrderRequest, error) {
	var req OrderRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return req, fmt.Errorf("%w: %v", ErrInvalidOrder, err)
	}
	if len(req.Items) < 1 || len(req.Items) > MaxLines {
		return req, fmt.Errorf("%w: %d lines, want 1..%d", ErrInvalidOrder, len(req.Items), MaxLines)
	}
	for i, l := range req.Items {
		if !ValidID(l.MenuID) {
			return req, fmt.Errorf("%w: items[%d].menuId", ErrInvalidOrder, i)
		}
		if l.Quantity < 1 || l.Quantity > MaxQuantity {
			return req, fmt.Errorf("%w: items[%d].quantity %d outside 1..%d", ErrInvalidOrder, i, l.Quantity, MaxQuantity)
		}
		if len(l.Toppings) > MaxToppings {
			return req, fmt.Errorf("%w: items[%d] has more than %d toppings", ErrInvalidOrder, i, MaxToppings)
		}
		for j, t := range l.Toppings {
			if !ValidID(t) {
				return req, fmt.Errorf("%w: items[%d].toppings", ErrInvalidOrder, i)
			}
			// ["egg","egg"] is not two eggs: quantity is per line.
			if slices.Contains(l.Toppings[:j], t) {
				return req, fmt.Errorf("%w: items[%d] lists topping %s twice", ErrInvalidOrder, i, t)
			}
		}
		if err := checkLineExtras(i, l); err != nil {
			return req, err
		}
	}
	if req.ExpectedTotal != nil && (*req.ExpectedTotal < 0 || *req.ExpectedTotal > MaxExpectedYen) {
		return req, fmt.Errorf("%w: expectedTotal out of range", ErrInvalidOrder)
	}
	return req, nil
}

// Normalize returns the cart in canonical form: toppings sorted and
// de-duplicated within a line, identical lines summed, lines sorted.
func Normalize(items []Line) []Line {
	merged := map[string]*Line{}
	var keys []string
	for _, l := range items {
		key, tops, opts, note := normalLine(l)
		if m, ok := merged[key]; ok {
			m.Quantity += l.Quantity
			continue
		}
		merged[key] = &Line{MenuID: l.MenuID, Quantity: l.Quantity, Toppings: tops, Options: opts, Note: note}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	out := make([]Line, 0, len(keys))
	for _, k := range keys {
		out = append(out, *merged[k])
	}
	return out
}

// LineKey is the key Normalize merges a line under: a line as the guest
// sent it and the normalized line it went into have the same key.
func LineKey(l Line) string {
	key, _, _, _ := normalLine(l)
	return key
}

// normalLine is a line's toppings, options and note in canonical form, and
// the key of all of them with its item.
func normalLine(l Line) (key string, tops []string, opts map[string][]string, note string) {
	tops = append([]string(nil), l.Toppings...)
	sort.Strings(tops)
	tops = dedupe(tops)
	opts, note = normalExtras(l)
	return l.MenuID + "\x00" + strings.Join(tops, "\x00") + extrasKey(opts, note), tops, opts, note
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	if out == nil {
		return []string{}
	}
	return out
}

// Fingerprint is SHA-256 over the session id and the normalized cart.
//
// The text hashed is the session id, then per line "\n" menuId "|"
// quantity "|" toppings joined by "," and the line's extras (extrasKey),
// built in one buffer and hashed at once (the same digest as written
// piece by piece, without a string per line).
func Fingerprint(sessionID string, normalized []Line) string {
	var buf [256]byte
	b := append(buf[:0], sessionID...)
	for _, l := range normalized {
		b = append(b, '\n')
		b = append(b, l.MenuID...)
		b = append(b, '|')
		b = strconv.AppendInt(b, int64(l.Quantity), 10)
		b = append(b, '|')
		for i, t := range l.Toppings {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t...)
		}
		b = append(b, extrasKey(l.Options, l.Note)...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
