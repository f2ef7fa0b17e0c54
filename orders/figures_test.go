package orders_test

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

var _ io.Writer = (*countingWriter)(nil)

// TestFiguresStaffCommands measures what the closing notes report; it is
// skipped unless MO_FIGURES=1 (it takes a minute):
//
//	MO_FIGURES=1 go test -run TestFigures -v ./orders/
func TestFiguresStaffCommands(t *testing.T) {
	if os.Getenv("MO_FIGURES") == "" {
		t.Skip("set MO_FIGURES=1 to measure")
	}
	s := startStore(t, 3, nil)
	const workers = 16
	run := func(n int, do func(i int) resp) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					if r := do(i); r.Status != 200 {
						t.Errorf("command %d: %d %s", i, r.Status, r.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// 10,000 staff commands: a 200-item menu, then stock changes.
	d := run(10000, func(i int) resp {
		if i < 200 {
			return s.staff(i%3, "PUT", fmt.Sprintf("/api/staff/menu/item%03d", i), map[string]any{"name": fmt.Sprintf("品目%d", i), "nameEn": "item", "category": "c", "price": 100 + i,
				"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}}})
		}
		return s.staff(i%3, "PUT", fmt.Sprintf("/api/staff/stock/item%03d", i%200), map[string]any{"quantity": i})
	})
	t.Logf("10,000 staff commands through all three nodes, %d callers: %v (%.0f/s)", workers, d, 10000/d.Seconds())

	// 10,000 closed sessions.
	d = run(10000, func(i int) resp {
		r := s.staff(i%3, "POST", "/api/staff/sessions", map[string]string{"tableId": fmt.Sprintf("T%d", i%50)})
		if r.Status != 200 {
			return r
		}
		var o struct{ SessionID string }
		r.json(t, &o)
		return s.staff((i+1)%3, "POST", "/api/staff/sessions/"+o.SessionID+"/checkout", nil)
	})
	t.Logf("10,000 sessions opened and checked out: %v", d)
	s.c.WaitConverged(30 * time.Second)
	var w countingWriter
	if err := s.c.Nodes[0].FSM().WriteSnapshot(&w); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot with a 200-item menu and 10,000 closed sessions: %.1f KiB", float64(w.n)/1024)
}
