package node

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimit is the soft limit `masterorder run` gives the Go
// runtime (debug.SetMemoryLimit): with the default GOGC alone the heap
// grows to twice what is live before a collection, and a box's live heap
// under 64 callers is 7-15 MiB. Measured under the closed loop, 32 MiB
// took 3-5 MiB off each node's peak RSS (Go's Sys 30-34 MiB instead of
// 40-51) at the same CPU per order; 24 MiB made the collector run so often
// that CPU per order rose by a third. It is soft: above it the runtime collects more often (at most
// half the CPU) instead of failing. Only the Go heap counts, not SQLite's
// page caches or the bbolt and binary pages the kernel maps.
const DefaultMemoryLimit = 32 << 20

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
