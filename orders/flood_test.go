package orders_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodFor runs one hostile phone's script for d: 8 loops, each POST a
// fresh Idempotency-Key and a fresh client id (so the cooldown never
// binds), a random cart, to a node in turn; every third request resends
// an earlier key. It returns requests made and answers by status.
func floodFor(t *testing.T, s *store, sess session, d time.Duration) (int64, map[int]int64) {
	t.Helper()
	var sent atomic.Int64
	var mu sync.Mutex
	byStatus := map[int]int64{}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var keys []string
			for i := 0; time.Now().Before(deadline); i++ {
				key := newKey()
				if i%3 == 2 && len(keys) > 0 {
					key = keys[rand.IntN(len(keys))]
				} else {
					keys = append(keys, key)
				}
				g := &guest{s: s, sess: sess, client: newClient()}
				r := g.order((w+i)%3, key, cart(line("tea", 1+rand.IntN(3))))
				sent.Add(1)
				mu.Lock()
				byStatus[r.Status]++
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	return sent.Load(), byStatus
}

// A hostile phone at a seated table loops orders as fast as it can. It
// cannot write more to the Raft log than the admission windows allow:
// certain rejections and replays are answered from the local replica, the
// rest is capped per session in memory, and the local answers reach the
// audit as aggregated rows. The store stays consistent and no answer is
// a 5xx.
func TestHostilePhoneCannotFloodTheLog(t *testing.T) {
	s := startStore(t, 3, patient)
	s.seedMenu()
	sess := s.openSession("F1")
	li, leader := s.c.WaitLeader(10 * time.Second)
	_ = li
	before := leader.Raft().LastIndex()
	const d = 4 * time.Second
	start := time.Now()
	sent, byStatus := floodFor(t, s, sess, d)
	elapsed := time.Since(start)
	for i := range s.svcs {
		if err := s.svcs[i].FlushRejections(context.Background()); err != nil {
			t.Errorf("flush node %d: %v", i, err)
		}
	}
	_, leader = s.c.WaitLeader(10 * time.Second)
	entries := leader.Raft().LastIndex() - before
	t.Logf("one hostile phone: %d requests in %v (%.0f/s) → %d log entries (%.1f/s); answers %v",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), entries, float64(entries)/elapsed.Seconds(), byStatus)
	for st, n := range byStatus {
		if st >= 500 || st < 200 {
			t.Errorf("%d answers with status %d", n, st)
		}
	}
	// Per node and window: at most proposalLimit (4) proposals for the
	// session; plus one summary per node, the expiry of the keys the
	// admitted orders set, and a leader's barrier.
	secs := int64(elapsed/time.Second) + 1
	bound := uint64(secs*3*4 + 3 + 4*secs*4 + 2)
	if entries > bound {
		t.Errorf("%d log entries from one phone in %v, bound %d", entries, elapsed, bound)
	}
	if sent < int64(entries)*3 {
		t.Logf("the machine was slow: only %d requests", sent)
	}
	// At most one order per burst window (1 s) was admitted.
	hist := s.guest(sess).history(0, "?limit=200")
	if int64(len(hist)) > secs+1 {
		t.Errorf("%d orders admitted in %v", len(hist), elapsed)
	}
	// The local answers are in the audit, aggregated.
	var audit struct {
		Entries []struct {
			ReasonCode string `json:"reasonCode"`
			Detail     string `json:"detail"`
		}
	}
	s.mustStaff(1, "GET", "/api/staff/audit?limit=200", nil).json(t, &audit)
	aggregated := 0
	for _, e := range audit.Entries {
		if strings.Contains(e.Detail, "before proposing") {
			aggregated++
		}
	}
	if aggregated == 0 {
		t.Errorf("no aggregated rejection rows in the audit: %+v", audit.Entries)
	}
	// The honest table next door still orders, and the replicas agree.
	other := s.openSession("F2")
	if r := s.guest(other).order(2, newKey(), cart(line("gyoza", 1))); r.Status != 200 {
		t.Errorf("another table's order: %d %s", r.Status, r.Body)
	}
	if q := s.stock(0, "gyoza"); q == nil || *q != 9 {
		t.Errorf("gyoza stock %v", q)
	}
	s.c.AssertIdentical(20 * time.Second)
	_ = fmt.Sprint
}
