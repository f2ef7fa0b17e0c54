package cluster

import (
	"slices"
	"testing"

	"masterorder/node/pki"
)

// Box ids follow one rule wherever a cluster is made or grown: a..z,
// then n27, n28, …, never an id in use, and every one a valid node id.
func TestNodeIDs(t *testing.T) {
	ids := NodeIDs(28)
	if !slices.Equal(ids[:3], []string{"a", "b", "c"}) || ids[25] != "z" || ids[26] != "n27" || ids[27] != "n28" {
		t.Errorf("NodeIDs(28) = %v", ids)
	}
	for _, id := range ids {
		if err := pki.ValidateNodeID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	if got := NextNodeID(map[string]bool{"a": true, "b": true, "d": true}); got != "c" {
		t.Errorf("NextNodeID with a, b, d used = %q, want c", got)
	}
}
