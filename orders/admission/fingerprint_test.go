package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"
)

// fingerprintAsBefore is Fingerprint as it was written before it hashed
// one buffer: the digest every stored command and row holds.
func fingerprintAsBefore(sessionID string, normalized []Line) string {
	h := sha256.New()
	io.WriteString(h, sessionID)
	for _, l := range normalized {
		io.WriteString(h, "\n"+l.MenuID+"|"+strconv.Itoa(l.Quantity)+"|"+strings.Join(l.Toppings, ",")+extrasKey(l.Options, l.Note))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fingerprint hashes exactly the bytes it always did, for carts of every
// shape: empty, unicode, options, notes with quotes and escapes, long
// carts past the stack buffer.
func TestFingerprintAsBefore(t *testing.T) {
	long := make([]Line, 0, 40)
	for i := range 40 {
		long = append(long, Line{MenuID: "item-" + strconv.Itoa(i), Quantity: i + 1, Toppings: []string{"egg", "nori", "negi"}})
	}
	carts := [][]Line{
		nil,
		{},
		{{MenuID: "ramen", Quantity: 1}},
		{{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg", "nori"}}, {MenuID: "tea", Quantity: 99, Toppings: []string{}}},
		{{MenuID: "ラーメン", Quantity: 3, Toppings: []string{"味玉"}, Options: map[string][]string{"size": {"large"}, "noodle": {"hard", "extra"}}}},
		{{MenuID: "tea", Quantity: 1, Note: "no ice \"please\"\n\t\\ 🍵 \u2028"}},
		{{MenuID: "tea", Quantity: 1, Options: map[string][]string{"": {""}}, Note: ""}},
		long,
	}
	for i, c := range carts {
		for _, session := range []string{"", "S1", "セッション", strings.Repeat("x", 300)} {
			if got, want := Fingerprint(session, c), fingerprintAsBefore(session, c); got != want {
				t.Errorf("cart %d session %q: %s, before %s", i, session, got, want)
			}
		}
	}
}
