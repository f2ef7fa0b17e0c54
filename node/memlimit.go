package node

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimit is the soft limit `masterorder run` gives the Go
// runtime (debug.SetMemoryLimit): a guard against a burst (a thousand
// phones at once) growing the heap until a 1 GB Pi swaps, set well above
// what a box uses, so that under normal load GOGC alone decides. A box's
// live heap under 64 callers is 7-15 MiB, the leader's more, and its Go
// runtime holds 40-60 MiB. Measured under the closed loop at 64 callers,
// a limit near that (32 MiB) took 3-5 MiB off a follower's peak RSS but
// kept the leader's collector running: 25-30 % fewer orders/s (616-679
// against 849-920 without, leader CPU per order 1.0 against 0.65 ms); 64
// MiB still cost about a tenth. It is soft: above it the runtime collects
// more often (at most half the CPU) instead of failing. Only the Go heap
// and runtime count, not SQLite's page caches or the bbolt and binary
// pages the kernel maps.
const DefaultMemoryLimit = 256 << 20

// SetMemoryLimit applies DefaultMemoryLimit to this process unless the
// operator set GOMEMLIMIT (the runtime has applied that one, and it wins),
// and returns the limit in effect. A process runs one box, so this belongs
// to `run`, not to New: tests start several nodes in one process.
func SetMemoryLimit() int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(DefaultMemoryLimit)
	return DefaultMemoryLimit
}
