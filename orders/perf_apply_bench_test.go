package orders

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/orders/admission"
	"masterorder/raftfsm"
)

// writtenBytes is this process's write_bytes so far (/proc/self/io: bytes
// it sent towards the disk, page cache included); 0 where unknown.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkApplyPlaceOrder guards the per-order cost of Apply on one
// replica: admitted guest orders (fresh phone and key, a cart new to its
// session, every window written), applied one per Raft batch and 32 per
// batch (a loaded leader's batches). cpu-ns/op is the process's CPU per
// order, the figure that bounds a 2-core box; allocs/op the garbage;
// written-B/op what the replica's files took per order (page cache: the
// FSM files are not synced).
//
//	go test -run '^$' -bench ApplyPlaceOrder -benchmem ./orders/
func BenchmarkApplyPlaceOrder(b *testing.B) {
	// grouped: Raft batches of 8 (what a follower gets at 64 callers),
	// the files committed once per 256 entries, as a node's FSM groups
	// them (raftfsm/group.go). tracked: grouped, with every sku of the
	// cart tracked (the others track none).
	for _, run := range []struct {
		batch            int
		grouped, tracked bool
	}{{1, false, false}, {32, false, false}, {8, true, false}, {8, true, true}} {
		batch := run.batch
		name := fmt.Sprintf("batch=%d", batch)
		var g raftfsm.Grouping
		if run.grouped {
			name += "/grouped"
			g = raftfsm.Grouping{Delay: time.Hour, Entries: 256}
		}
		if run.tracked {
			name = fmt.Sprintf("batch=%d/tracked", batch)
		}
		b.Run(name, func(b *testing.B) {
			tmpl := b.TempDir()
			if err := fzBuild(tmpl); err != nil {
				b.Fatal(err)
			}
			f := fzOpenGrouped(b, tmpl, g)
			idx := f.Applied()
			next := func(t raftfsm.CommandType, p any) *raft.Log { idx++; return fzEntry(idx, t, p) }
			// Enough sessions that none is in its 1 s burst window when
			// its turn comes again (fzEntry advances FSM time 10 ms per
			// index).
			const sessions = 256
			var setup []*raft.Log
			if run.tracked {
				for _, sku := range []string{"ramen", "egg", "tea"} {
					q := int64(maxStock)
					setup = append(setup, next(CmdSetStock, setStockCmd{SKU: sku, Quantity: &q}))
				}
			} else {
				setup = append(setup, next(CmdSetStock, setStockCmd{SKU: "egg"}))
			}
			ids := make([]string, sessions)
			for i := range ids {
				ids[i] = fmt.Sprintf("S%022d", 1000+i)
				setup = append(setup, next(CmdOpenSession, openSessionCmd{SessionID: ids[i], TableID: fmt.Sprintf("B%d", i), PIN: "1234"}))
			}
			for i, r := range f.ApplyBatch(setup) {
				if res := r.(raftfsm.Response); res.Err != nil {
					b.Fatalf("setup %d: %v", i, res.Err)
				}
			}
			if err := f.Flush(); err != nil {
				b.Fatal(err)
			}
			w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
			order := func(i int) *raft.Log {
				sid := ids[i%sessions]
				// A cart this session has not had within the payload window.
				round := i / sessions
				lines := admission.Normalize([]admission.Line{
					{MenuID: "ramen", Quantity: 1 + round%99, Toppings: []string{"egg"}},
					{MenuID: "tea", Quantity: 1 + (round/99)%99}})
				return next(CmdPlaceOrder, placeOrderCmd{SessionID: sid, RequestID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
					ClientID: fmt.Sprintf("guest-bench%012x", i), Source: "guest", Node: "a", Items: lines,
					Fingerprint: admission.Fingerprint(sid, lines), CandidateID: int64(100000 + i), Windows: w, Attempt: fmt.Sprintf("a%d", i)})
			}
			// Commands are built outside the timer: they are the
			// proposer's work, not Apply's.
			logs := make([]*raft.Log, b.N)
			for i := range logs {
				logs[i] = order(i)
			}
			outs := make([]any, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, w0 := cpuTime(), writtenBytes()
			for i := 0; i < b.N; i += batch {
				outs = append(outs, f.ApplyBatch(logs[i:min(i+batch, b.N)])...)
			}
			if err := f.Flush(); err != nil { // the last group's commit is part of the cost
				b.Fatal(err)
			}
			b.StopTimer()
			cpu, written := cpuTime()-cpu0, writtenBytes()-w0
			for i, r := range outs {
				res := r.(raftfsm.Response)
				var out Result
				if res.Err != nil || json.Unmarshal(res.Data, &out) != nil || out.Status != 200 || out.Replay {
					b.Fatalf("order %d not admitted: %v %s", i, res.Err, res.Data)
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
		})
	}
}
