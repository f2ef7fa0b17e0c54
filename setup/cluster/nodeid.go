package cluster

import "strconv"

// NextNodeID is the first of a..z not in used (ids are never reused: a
// removed box's certificate stays refused), then n27, n28, …
func NextNodeID(used map[string]bool) string {
	for r := 'a'; r <= 'z'; r++ {
		if !used[string(r)] {
			return string(r)
		}
	}
	for i := 27; ; i++ {
		if id := "n" + strconv.Itoa(i); !used[id] {
			return id
		}
	}
}

// NodeIDs are the ids of a new cluster's n boxes, by NextNodeID's rule:
// a, b, c, …
func NodeIDs(n int) []string {
	used := map[string]bool{}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = NextNodeID(used)
		used[ids[i]] = true
	}
	return ids
}
