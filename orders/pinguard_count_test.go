package orders

import (
	"fmt"
	"testing"
)

// parseCount reads every value exactly as fmt.Sscan did before it: the
// digits fast path and the fallback agree on every form.
func TestParseCountAsSscan(t *testing.T) {
	for _, v := range []string{"", "0", "1", "7", "42", "999999999", "1000000000", "99999999999999999999",
		"007", "0x10", "0b11", "+3", "-2", " 5", "5 ", "5\n", "3abc", "abc", "٣", "1_000", "0o7"} {
		want := 0
		fmt.Sscan(v, &want)
		if got := parseCount([]byte(v)); got != want {
			t.Errorf("parseCount(%q) = %d, fmt.Sscan reads %d", v, got, want)
		}
	}
	for n := range 1000 {
		v := fmt.Sprint(n)
		if got := parseCount([]byte(v)); got != n {
			t.Errorf("parseCount(%q) = %d", v, got)
		}
	}
}
