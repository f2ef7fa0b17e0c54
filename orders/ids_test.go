package orders

import (
	"regexp"
	"testing"
)

// A proposal's attempt id is 32 lowercase hex digits (fmt's %x of 16
// random bytes, as it always was written), a fresh one each time.
func TestNewRequestIDForm(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 200 {
		id := newRequestID()
		if !form.MatchString(id) || seen[id] {
			t.Fatalf("attempt id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}
