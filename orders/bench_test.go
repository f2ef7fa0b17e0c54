package orders_test

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/orders"
)

// BenchmarkGuestOrders: whole guest orders (HTTP, validation, one Raft
// command, Apply on three nodes) on a 3-node loopback cluster, spread over
// all nodes, at 16, 64 and 256 concurrent guests. Each order comes from a
// fresh phone at one of many tables, so the admission windows (cooldown per
// phone, burst per table) do not throttle the measurement.
//
//	go test -run '^$' -bench GuestOrders -benchtime 4000x ./orders/
func BenchmarkGuestOrders(b *testing.B) {
	for _, conc := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("guests=%d", conc), func(b *testing.B) {
			// Many tables, each visited by one worker in turn, and a 100 ms
			// burst window: a table then never sees two orders at once.
			s := startStore(b, 3, func(_ int, c *orders.FileConfig) { c.Admission.SessionBurst.Duration = 100 * time.Millisecond })
			s.seedMenu()
			s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": nil})
			const perWorker = 8
			tables := make([]session, conc*perWorker)
			var wg sync.WaitGroup
			for i := range tables {
				wg.Add(1)
				go func(i int) { defer wg.Done(); tables[i] = s.openSession(fmt.Sprintf("B%d", i)) }(i)
				if i%32 == 31 {
					wg.Wait()
				}
			}
			wg.Wait()
			if os.Getenv("MO_BENCH_LEADER_ONLY") != "" {
				benchOnlyNode, _ = s.c.WaitLeader(5 * time.Second)
			}
			var next atomic.Int64
			lat := make([]time.Duration, b.N)
			var failed, ok atomic.Int64
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < conc; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for mine := 0; ; mine++ {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						g := s.guest(tables[w*perWorker+mine%perWorker])
						body := cart(line("ramen", 1+int(i%3), "egg"), line("tea", 1+int(i%2)))
						t0 := time.Now()
						r := g.order(target(int(i)), newKey(), body)
						lat[i] = time.Since(t0)
						if r.Status != 200 {
							if failed.Add(1) <= 3 {
								b.Logf("rejected: %d %s", r.Status, r.Body)
							}
						} else {
							ok.Add(1)
						}
					}
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(ok.Load())/elapsed.Seconds(), "orders/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(failed.Load()), "rejected")
		})
	}
}

var benchOnlyNode = -1

func target(i int) int {
	if benchOnlyNode >= 0 {
		return benchOnlyNode
	}
	return i % 3
}
