package node

import (
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimitDefaultsUnlessGOMEMLIMIT(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	t.Setenv("GOMEMLIMIT", "")
	if got := SetMemoryLimit(); got != DefaultMemoryLimit {
		t.Fatalf("SetMemoryLimit() = %d, want %d", got, DefaultMemoryLimit)
	}
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Fatalf("runtime limit = %d, want %d", got, DefaultMemoryLimit)
	}

	// The operator's GOMEMLIMIT (applied by the runtime at start; stood in
	// for here by setting the limit directly) is left alone.
	const operator = 200 << 20
	debug.SetMemoryLimit(operator)
	t.Setenv("GOMEMLIMIT", "200MiB")
	if got := SetMemoryLimit(); got != operator {
		t.Fatalf("SetMemoryLimit() with GOMEMLIMIT = %d, want %d", got, operator)
	}
	if got := debug.SetMemoryLimit(-1); got != operator {
		t.Fatalf("runtime limit with GOMEMLIMIT = %d, want %d", got, operator)
	}
}
