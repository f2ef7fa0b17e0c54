package update

import (
	"strconv"
	"strings"
)

// Compare orders two release versions ("1.2.0", "v1.10.3", "1.2.0-rc1",
// git describe's "1.2.0-4-gabc"): numbers compared as numbers, part by
// part; a pre-release ("-rc1") before its release. ok is false when
// either has no leading number ("dev"): the order is unknown.
func Compare(a, b string) (cmp int, ok bool) {
	na, pa, oka := parseVersion(a)
	nb, pb, okb := parseVersion(b)
	if !oka || !okb {
		return 0, false
	}
	for i := 0; i < max(len(na), len(nb)); i++ {
		var x, y int
		if i < len(na) {
			x = na[i]
		}
		if i < len(nb) {
			y = nb[i]
		}
		if x != y {
			if x < y {
				return -1, true
			}
			return 1, true
		}
	}
	switch {
	case pa == pb:
		return 0, true
	case pa == "": // a release after its pre-releases
		return 1, true
	case pb == "":
		return -1, true
	case pa < pb:
		return -1, true
	default:
		return 1, true
	}
}

// parseVersion splits "v1.2.3-rc1" into [1 2 3] and "rc1".
func parseVersion(v string) (nums []int, pre string, ok bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	core, pre, _ := strings.Cut(v, "-")
	for _, part := range strings.Split(core, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, "", false
		}
		nums = append(nums, n)
	}
	return nums, pre, len(nums) > 0
}
