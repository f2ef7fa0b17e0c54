package admission

import (
	"strings"
	"testing"
)

func TestParseIdempotencyKey(t *testing.T) {
	const k = "550e8400-e29b-41d4-a716-446655440000"
	for _, raw := range []string{k, strings.ToUpper(k), `"` + k + `"`, ` "` + strings.ToUpper(k) + `" `} {
		got, ok := ParseIdempotencyKey(raw)
		if !ok || got != k {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v", raw, got, ok)
		}
	}
	for _, raw := range []string{"", "abc", `"` + k, "550e8400-e29b-11d4-a716-446655440000", "550e8400-e29b-41d4-c716-446655440000", k + "0", "550e8400e29b41d4a716446655440000"} {
		if got, ok := ParseIdempotencyKey(raw); ok {
			t.Errorf("ParseIdempotencyKey(%q) accepted as %q", raw, got)
		}
	}
}

func TestValidClientID(t *testing.T) {
	if !ValidClientID("guest-abcdEFGH_1-") || ValidClientID("guest-short") || ValidClientID("user-abcdefgh") || ValidClientID("guest-abc def gh") {
		t.Fatal("client id pattern wrong")
	}
}

func TestDecodeOrderRejects(t *testing.T) {
	bad := []string{
		``, `null`, `[]`, `{}`, `{"items":[]}`,
		`{"items":[{"menuId":"ramen","quantity":0}]}`,
		`{"items":[{"menuId":"ramen","quantity":100}]}`,
		`{"items":[{"menuId":"ramen","quantity":1.5}]}`,
		`{"items":[{"menuId":"ramen","quantity":"1"}]}`,
		`{"items":[{"menuId":"ra men","quantity":1}]}`,
		`{"items":[{"menuId":"ramen","quantity":1,"extra":1}]}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"foo":true}`,
		`{"items":[{"menuId":"ramen","quantity":1}]} {}`,
		`{"items":[{"menuId":"ramen","quantity":1,"toppings":[1]}]}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"expectedTotal":-1}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"allowRepeat":"yes"}`,
	}
	for _, b := range bad {
		if _, err := DecodeOrder([]byte(b)); err == nil {
			t.Errorf("DecodeOrder(%s) accepted", b)
		}
	}
	lines := make([]string, 51)
	for i := range lines {
		lines[i] = `{"menuId":"ramen","quantity":1}`
	}
	if _, err := DecodeOrder([]byte(`{"items":[` + strings.Join(lines, ",") + `]}`)); err == nil {
		t.Error("51 lines accepted")
	}
	if _, err := DecodeOrder([]byte(`{"items":[` + strings.Join(lines[:50], ",") + `]}`)); err != nil {
		t.Errorf("50 lines rejected: %v", err)
	}
}

func TestFingerprintIgnoresOrderDuplicatesAndKeyOrder(t *testing.T) {
	a, err := DecodeOrder([]byte(`{"items":[{"menuId":"ramen","quantity":2,"toppings":["egg","nori"]},{"menuId":"gyoza","quantity":1}],"expectedTotal":10}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeOrder([]byte(`{"allowRepeat":true,"items":[{"quantity":1,"menuId":"gyoza","toppings":[]},{"toppings":["nori","egg"],"quantity":1,"menuId":"ramen"},{"menuId":"ramen","toppings":["egg","nori"],"quantity":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fa, fb := Fingerprint("s1", Normalize(a.Items)), Fingerprint("s1", Normalize(b.Items))
	if fa != fb {
		t.Fatalf("fingerprints differ: %s vs %s", fa, fb)
	}
	if Fingerprint("s2", Normalize(a.Items)) == fa {
		t.Fatal("session id not in fingerprint")
	}
	c, _ := DecodeOrder([]byte(`{"items":[{"menuId":"ramen","quantity":3,"toppings":["egg","nori"]},{"menuId":"gyoza","quantity":1}]}`))
	if Fingerprint("s1", Normalize(c.Items)) == fa {
		t.Fatal("different quantity, same fingerprint")
	}
	n := Normalize(b.Items)
	if len(n) != 2 || n[0].MenuID != "gyoza" || n[1].Quantity != 2 || n[1].Toppings[0] != "egg" {
		t.Fatalf("normalized = %+v", n)
	}
}

func TestNormalizeDedupesToppings(t *testing.T) {
	n := Normalize([]Line{{MenuID: "r", Quantity: 1, Toppings: []string{"egg", "egg"}}, {MenuID: "r", Quantity: 1, Toppings: []string{"egg"}}})
	if len(n) != 1 || n[0].Quantity != 2 || len(n[0].Toppings) != 1 {
		t.Fatalf("normalized = %+v", n)
	}
}
