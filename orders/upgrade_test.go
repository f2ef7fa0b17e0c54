package orders_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
)

// Item 7: a rolling upgrade old → new under a storm of guest orders and
// staff changes. The old build's dispatch table knows every command at
// version 1 only (orders.RegisterV1); the new one proposes version 2. The
// rule: an old box that meets a version-2 entry halts (never a silent
// skip, never the old meaning), the cluster goes on committing through the
// upgraded box, and once every box runs the new build they all converge
// to identical files, with every acknowledged order present exactly once.
func TestRollingUpgradeUnderStormConverges(t *testing.T) {
	var upgraded [3]atomic.Bool
	s := startStoreWith(t, 3, fastWindows, func(i int) node.Options {
		o := orders.NodeOptions()
		if !upgraded[i].Load() {
			o.Register = orders.RegisterV1
		}
		return o
	})
	s.seedMenu()
	s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 100000})

	var (
		mu    sync.Mutex
		acked = map[int64]string{} // order id → session
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	// Guests: each table orders again and again; a failed try is resent
	// with the same key to the next box (the guest app's failover).
	for tb := 0; tb < 4; tb++ {
		sess := s.openSession(fmt.Sprintf("U%d", tb))
		g := s.guest(sess)
		wg.Add(1)
		go func(tb int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := newKey()
				for attempt := 0; ; attempt++ {
					body := cart(line("gyoza", 1), line("tea", 1+n%2))
					body["allowRepeat"] = true // each one is a new order, not the same cart again
					r := g.order((tb+n+attempt)%3, key, body)
					if r.Status == 200 {
						var o success
						r.json(t, &o)
						mu.Lock()
						acked[o.OrderID] = sess.ID
						mu.Unlock()
						break
					}
					if r.Status >= 400 && r.Status < 500 && r.Status != 409 && r.Status != 429 {
						t.Errorf("guest order: %d %s", r.Status, r.Body)
						return
					}
					if attempt > 400 {
						t.Errorf("guest order never got through: last %d %s", r.Status, r.Body)
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
			}
		}(tb)
	}
	// Staff: stock changes and kitchen bumps through every box (errors
	// from a halted or restarting box are expected and retried later).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			s.staff(n%3, "PUT", "/api/staff/stock/egg", map[string]any{"quantity": 500 + n})
			mu.Lock()
			var id int64
			for k := range acked {
				id = k
				break
			}
			mu.Unlock()
			if id != 0 {
				s.staff((n+1)%3, "PATCH", "/api/staff/orders/"+strconv.FormatInt(id, 10), map[string]string{"status": "COOKING"})
			}
		}
	}()

	time.Sleep(time.Second) // the storm on the old cluster
	for i := 0; i < 3; i++ {
		// As an operator would: move the leadership off the box first.
		deadline := time.Now().Add(20 * time.Second)
		for s.c.Nodes[i].IsLeader() {
			if time.Now().After(deadline) {
				t.Fatalf("node %d keeps the leadership", i)
			}
			s.c.Nodes[i].Raft().LeadershipTransfer().Error()
			time.Sleep(100 * time.Millisecond)
		}
		s.c.StopNode(i)
		upgraded[i].Store(true)
		s.c.StartNode(i)
		s.c.WaitLeader(20 * time.Second)
		if i == 0 {
			// A version-2 command through the upgraded box: the old boxes
			// must halt on it rather than apply it their way.
			id := int64(0)
			for id == 0 {
				mu.Lock()
				for k := range acked {
					id = k
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
			deadline := time.Now().Add(30 * time.Second)
			for s.c.Nodes[1].FSM().Halted() == nil || s.c.Nodes[2].FSM().Halted() == nil {
				if time.Now().After(deadline) {
					t.Fatalf("old boxes did not halt on a version-2 entry (halted: %v, %v)", s.c.Nodes[1].FSM().Halted(), s.c.Nodes[2].FSM().Halted())
				}
				s.staff(0, "PUT", "/api/staff/stock/nori", map[string]any{"quantity": 7})
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("old box halted: %v", s.c.Nodes[1].FSM().Halted())
		}
		time.Sleep(700 * time.Millisecond) // the storm on the mixed cluster
	}
	time.Sleep(time.Second) // and on the upgraded one
	close(stop)
	wg.Wait()

	for i, n := range s.c.Nodes {
		if err := n.FSM().Halted(); err != nil {
			t.Fatalf("node %d still halted after the upgrade: %v", i, err)
		}
	}
	s.c.AssertIdentical(30 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 20 {
		t.Fatalf("only %d orders acknowledged during the storm", len(acked))
	}
	for i := 0; i < 3; i++ {
		seen := map[int64]int{}
		for _, sid := range uniqueSessions(acked) {
			for _, o := range s.staffSessionOrders(i, sid) {
				seen[o]++
			}
		}
		for id := range acked {
			if seen[id] != 1 {
				t.Fatalf("node %d holds acknowledged order %d %d times", i, id, seen[id])
			}
		}
	}
	t.Logf("%d orders acknowledged across the upgrade", len(acked))
}

func uniqueSessions(acked map[int64]string) []string {
	set := map[string]bool{}
	var out []string
	for _, s := range acked {
		if !set[s] {
			set[s] = true
			out = append(out, s)
		}
	}
	return out
}

// staffSessionOrders lists a session's order ids on node i (the bill).
func (s *store) staffSessionOrders(i int, sessionID string) []int64 {
	s.t.Helper()
	r := s.mustStaff(i, "POST", "/api/staff/sessions/"+sessionID+"/checkout/begin", nil)
	var bill struct {
		Orders []struct {
			OrderID int64 `json:"orderId"`
		} `json:"orders"`
	}
	r.json(s.t, &bill)
	var ids []int64
	for _, o := range bill.Orders {
		ids = append(ids, o.OrderID)
	}
	return ids
}
