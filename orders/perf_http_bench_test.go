package orders_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"masterorder/orders"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGuestOrderHandler guards the whole per-order cost of one box
// answering a guest order: the HTTP handler (echo middleware, decoding,
// validation, session and PIN, pre-admission), the Raft commit and Apply,
// on a single-node store called in-process (no network, no client), 16
// callers at once so that Raft batches as under load. cpu-ns/op is the
// process's CPU per order and allocs/op its allocations, Raft's included.
//
//	go test -run '^$' -bench GuestOrderHandler -benchmem ./orders/
func BenchmarkGuestOrderHandler(b *testing.B) {
	// A table comes round again after 1,024 orders; at 100 ms a burst
	// window outlived that on a fast machine (~110 µs per order) and the
	// benchmark failed on SESSION_ORDER_IN_PROGRESS. 20 ms leaves 5x.
	s := startStore(b, 1, func(_ int, c *orders.FileConfig) { c.Admission.SessionBurst.Duration = 20 * time.Millisecond })
	// seedMenu's items, all on the one node.
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900,
		"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}, {"toppingId": "nori", "name": "海苔", "price": 80}}})
	s.mustStaff(0, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300})
	s.mustStaff(0, "PUT", "/api/staff/stock/ramen", map[string]any{"quantity": 1000000})
	const callers = 16
	tables := make([]session, 64*callers)
	for i := range tables {
		tables[i] = s.openSession(fmt.Sprintf("H%d", i))
	}
	h := s.c.Nodes[0].Echo()
	// Carts differ per round so a session never meets its own payload
	// window.
	bodies := make([][]byte, 64)
	for r := range bodies {
		bodies[r], _ = json.Marshal(cart(line("ramen", 1+r%32, "egg"), line("tea", 1+r/32)))
	}
	var next atomic.Int64
	var failed atomic.Int64
	var first sync.Once
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				t := tables[i%len(tables)]
				req := httptest.NewRequest(http.MethodPost, "/api/guest/sessions/"+t.ID+"/orders", bytes.NewReader(bodies[(i/len(tables))%len(bodies)]))
				req.RemoteAddr = "127.0.0.1:40000" // a load generator, not one phone: no per-address cap
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", newKey())
				req.Header.Set("X-MasterOrder-Client-Id", newClient())
				req.Header.Set("X-Session-PIN", t.PIN)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					failed.Add(1)
					first.Do(func() { b.Logf("order %d: %d %s", i, rec.Code, rec.Body.Bytes()) })
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d orders not admitted", n, b.N)
	}
}
