package admission

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for the guest-facing parsers. Seeds live in
// testdata/fuzz/<Target>/ and in the f.Add calls; .ci/fuzz.sh runs each
// target for a short, bounded time.

// FuzzDecodeOrder: any body either decodes into an order that satisfies
// every documented limit, or is rejected with ErrInvalidOrder; it never
// panics, and an accepted body survives a re-encode unchanged.
func FuzzDecodeOrder(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"menuId":"ramen","quantity":2,"toppings":["egg"]}],"expectedTotal":2040,"allowRepeat":false}`,
		`{"items":[{"menuId":"tea","quantity":1}]}`,
		`{"items":[]}`,
		`{"items":[{"menuId":"ramen","quantity":2,"toppings":["egg"],"extra":1}]}`,
		`{"items":[{"menuId":"ramen","quantity":"2"}]}`,
		`{"items":[{"menuId":"ramen","quantity":1e2}]}`,
		`{"items":[{"menuId":"ramen","quantity":1}]}{}`,
		`{"items":null,"expectedTotal":-1}`,
		`[{"menuId":"ramen","quantity":1}]`,
		`{"items":[{"menuId":"ra men","quantity":1}]}`,
		`{"items":[{"menuId":"ramen","quantity":99,"toppings":["a","b","c","d","e","f","g","h","i","j","k"]}]}`,
		`{"ITEMS":[{"MENUID":"ramen","QUANTITY":1}]}`,
		"\xef\xbb\xbf{\"items\":[{\"menuId\":\"ramen\",\"quantity\":1}]}",
		`{"items":[{"menuId":"ramen","quantity":9223372036854775808}]}`,
		`{"items":[{"menuId":"\u0072amen","quantity":1}],"expectedTotal":100000001}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeOrder(body)
		if err != nil {
			if !strings.Contains(err.Error(), ErrInvalidOrder.Error()) {
				t.Fatalf("error does not wrap ErrInvalidOrder: %v", err)
			}
			return
		}
		if len(req.Items) < 1 || len(req.Items) > MaxLines {
			t.Fatalf("accepted %d lines", len(req.Items))
		}
		for _, l := range req.Items {
			if !ValidID(l.MenuID) || l.Quantity < 1 || l.Quantity > MaxQuantity || len(l.Toppings) > MaxToppings {
				t.Fatalf("accepted line %+v", l)
			}
			for _, tp := range l.Toppings {
				if !ValidID(tp) {
					t.Fatalf("accepted topping %q", tp)
				}
			}
		}
		if req.ExpectedTotal != nil && (*req.ExpectedTotal < 0 || *req.ExpectedTotal > MaxExpectedYen) {
			t.Fatalf("accepted expectedTotal %d", *req.ExpectedTotal)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		req2, err := DecodeOrder(again)
		if err != nil {
			t.Fatalf("re-encoded order %s rejected: %v", again, err)
		}
		if b, _ := json.Marshal(req2); !bytes.Equal(b, again) {
			t.Fatalf("round trip changed the order: %s vs %s", again, b)
		}
		// What the handler computes next must not panic either.
		Fingerprint("session", Normalize(req.Items))
	})
}

// cartFromBytes builds a cart from fuzz input: ids from a small alphabet
// so lines and toppings collide often (that is where normalization works).
func cartFromBytes(data []byte) []Line {
	ids := []string{"ramen", "tea", "egg", "nori", "gyoza", "a", "b", "a-b", "a_b", "ab"}
	var lines []Line
	for len(data) >= 3 && len(lines) < MaxLines {
		l := Line{MenuID: ids[int(data[0])%len(ids)], Quantity: int(data[1])%MaxQuantity + 1}
		n := int(data[2]) % 4
		data = data[3:]
		for i := 0; i < n && len(data) > 0; i++ {
			l.Toppings = append(l.Toppings, ids[int(data[0])%len(ids)])
			data = data[1:]
		}
		lines = append(lines, l)
	}
	return lines
}

// FuzzNormalizeFingerprint: the fingerprint is a property of the cart, not
// of how it was sent. Permuting lines, permuting (or repeating) toppings
// within a line, and splitting a line into two lines that sum to it give
// the same fingerprint; normalizing twice changes nothing; a different
// session gives a different fingerprint.
func FuzzNormalizeFingerprint(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2}, uint64(1), "sess-1")
	f.Add([]byte{0, 2, 2, 2, 3, 1, 5, 0, 4, 1, 0}, uint64(7), "AAAAAAAAAAAAAAAAAAAAAA")
	f.Add([]byte{5, 9, 0, 6, 9, 0, 7, 9, 0, 8, 9, 0}, uint64(42), "s")
	f.Add([]byte{}, uint64(0), "")
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, session string) {
		lines := cartFromBytes(data)
		norm := Normalize(lines)
		fp := Fingerprint(session, norm)
		if len(fp) != 64 {
			t.Fatalf("fingerprint %q", fp)
		}
		if again := Normalize(norm); !equalLines(again, norm) {
			t.Fatalf("normalize is not idempotent: %v vs %v", norm, again)
		}
		// Every line as sent has the key of exactly one normalized line
		// (a refusal's field is renumbered by it, orders/lines.go).
		for i, l := range lines {
			n := 0
			for _, m := range norm {
				if LineKey(m) == LineKey(l) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("line %d %v has the key of %d normalized lines: %v", i, l, n, norm)
			}
		}
		total := func(ls []Line) map[string]int {
			m := map[string]int{}
			for _, l := range ls {
				m[l.MenuID+"|"+strings.Join(dedupeSorted(l.Toppings), ",")] += l.Quantity
			}
			return m
		}
		if a, b := total(lines), total(norm); !equalCounts(a, b) {
			t.Fatalf("normalize changed the cart: %v vs %v", a, b)
		}
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		variant := make([]Line, 0, len(lines)+1)
		for _, l := range lines {
			tops := append([]string(nil), l.Toppings...)
			rng.Shuffle(len(tops), func(i, j int) { tops[i], tops[j] = tops[j], tops[i] })
			if len(tops) > 0 && rng.IntN(3) == 0 {
				tops = append(tops, tops[rng.IntN(len(tops))]) // a repeated topping
			}
			l.Toppings = tops
			if l.Quantity > 1 && rng.IntN(2) == 0 {
				k := 1 + rng.IntN(l.Quantity-1)
				a, b := l, l
				a.Quantity, b.Quantity = k, l.Quantity-k
				b.Toppings = append([]string(nil), tops...)
				rng.Shuffle(len(b.Toppings), func(i, j int) { b.Toppings[i], b.Toppings[j] = b.Toppings[j], b.Toppings[i] })
				variant = append(variant, a, b)
				continue
			}
			variant = append(variant, l)
		}
		rng.Shuffle(len(variant), func(i, j int) { variant[i], variant[j] = variant[j], variant[i] })
		if got := Fingerprint(session, Normalize(variant)); got != fp {
			t.Fatalf("same cart, different fingerprint:\n%v\n%v", lines, variant)
		}
		if len(norm) > 0 && Fingerprint(session+"x", norm) == fp {
			t.Fatal("fingerprint ignores the session")
		}
		// A different quantity is a different cart.
		if len(norm) > 0 {
			changed := append([]Line(nil), norm...)
			changed[0].Quantity++
			if Fingerprint(session, Normalize(changed)) == fp {
				t.Fatal("fingerprint ignores a quantity")
			}
		}
	})
}

func dedupeSorted(s []string) []string {
	c := append([]string(nil), s...)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return dedupe(c)
}

func equalLines(a, b []Line) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

var canonicalKey = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// FuzzParseIdempotencyKey: an accepted key is always the canonical
// lower-case UUID v4 (safe to put in KV keys, SQL and logs), parsing is
// idempotent, and every accepted spelling (upper case, quoted) of it is
// the same key.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{
		"550e8400-e29b-41d4-a716-446655440000",
		"550E8400-E29B-41D4-A716-446655440000",
		`"550e8400-e29b-41d4-a716-446655440000"`,
		` "550e8400-e29b-41d4-a716-446655440000" `,
		"550e8400-e29b-11d4-a716-446655440000",
		"550e8400-e29b-41d4-c716-446655440000",
		"550e8400e29b41d4a716446655440000",
		`""`, `"`, "",
		"550e8400-e29b-41d4-a716-446655440000\n",
		"550e8400-e29b-41d4-a716-44665544000\u212a",
		"\"550e8400-e29b-41d4-a716-446655440000\r\nX-Injected: 1\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, ok := ParseIdempotencyKey(raw)
		if !ok {
			if key != "" {
				t.Fatalf("rejected %q but returned %q", raw, key)
			}
			return
		}
		if !canonicalKey.MatchString(key) || !utf8.ValidString(key) {
			t.Fatalf("accepted %q as non-canonical %q", raw, key)
		}
		for _, spelling := range []string{key, strings.ToUpper(key), `"` + key + `"`, " " + key + "\t"} {
			if k2, ok := ParseIdempotencyKey(spelling); !ok || k2 != key {
				t.Fatalf("spelling %q of %q gives %q, %v", spelling, key, k2, ok)
			}
		}
		// The raw value must itself be a spelling of the key: nothing but
		// case, quotes and surrounding space may differ.
		trimmed := strings.TrimSpace(raw)
		trimmed = strings.TrimSuffix(strings.TrimPrefix(trimmed, `"`), `"`)
		if !strings.EqualFold(trimmed, key) || len(trimmed) != len(key) {
			t.Fatalf("accepted %q as %q", raw, key)
		}
	})
}

// FuzzIDChecksMatchTheirPatterns: the byte-loop id checks accept exactly
// what the regular expressions they replaced accept.
func FuzzIDChecksMatchTheirPatterns(f *testing.F) {
	idRe := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	clientRe := regexp.MustCompile(`^guest-[A-Za-z0-9_-]{8,64}$`)
	for _, s := range []string{
		"", "a", "ramen", "B-12_x", strings.Repeat("a", 64), strings.Repeat("a", 65), "ra men", "é", "a\n",
		"guest-", "guest-1234567", "guest-12345678", "guest-" + strings.Repeat("Z", 64), "guest-" + strings.Repeat("Z", 65), "Guest-12345678",
		"550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-c716-446655440000", "550e8400-e29b-11d4-a716-446655440000",
		"550E8400-E29B-41D4-A716-446655440000", "550e8400e29b41d4a716446655440000----",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidID(s), idRe.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidClientID(s), clientRe.MatchString(s); got != want {
			t.Fatalf("ValidClientID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := isUUIDv4(s), canonicalKey.MatchString(s); got != want {
			t.Fatalf("isUUIDv4(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
