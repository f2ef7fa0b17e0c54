package orders_test

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
)

// Store-floor "Bursts": 64 concurrent writes through one follower, with
// mutual TLS on the internal channel (the leader caps TLS handshakes in
// flight per host at 16), right after start and after the follower's
// connections to the leader went idle and closed: every one succeeds, and
// the follower dials at most one connection per peer for each burst.
func TestBurstThroughFollowerNeverFails(t *testing.T) {
	const idle = 2 * time.Second
	withTLS := hostileTLS(t)
	s := startStore(t, 3, func(i int, c *orders.FileConfig) { withTLS(i, c); patient(i, c) }, func(o *node.Options) { o.PeerIdleTimeout = idle })
	li, _ := s.c.WaitLeader(10 * time.Second)
	f := -1
	for i := range s.c.Nodes {
		if i != li && i != 0 { // node 0 served the login: its pool is warm
			f = i
			break
		}
	}

	// burst reports the connections the follower dialled for it.
	burst := func(what string, fn func(k int) resp) int {
		t.Helper()
		before := s.peerDials(f)
		start := time.Now()
		var wg sync.WaitGroup
		out := make([]resp, 64)
		for k := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k] = fn(k)
			}()
		}
		wg.Wait()
		took := time.Since(start)
		for k, r := range out {
			if r.Status != 200 {
				t.Fatalf("%s: request %d through follower %d: %d %s", what, k, f, r.Status, r.Body)
			}
		}
		dials := s.peerDials(f) - before
		if dials > 2 {
			t.Fatalf("%s: follower dialled %d connections to its peers, want one per peer at most", what, dials)
		}
		t.Logf("%s: 64 × 200 through follower %d in %v, %d connection(s) dialled", what, f, took.Round(time.Millisecond), dials)
		return dials
	}
	// afterIdle waits for the follower's pool to close, then bursts. A
	// burst that dialled nothing met a pool still open (a starved idle
	// timer on a loaded machine): it exercised nothing cold, so wait and
	// burst again, a few times at most.
	afterIdle := func(what string, fn func(k int) resp) {
		t.Helper()
		for try := 1; ; try++ {
			time.Sleep(idle + 2*time.Second)
			if burst(what, fn) >= 1 {
				return
			}
			if try == 4 {
				t.Fatalf("%s: the follower's pool never went cold (%d bursts dialled nothing)", what, try)
			}
		}
	}
	sessions := make([]session, 64)
	var mu sync.Mutex
	openOn := func(k int) resp {
		r := s.staff(f, "POST", "/api/staff/sessions", map[string]string{"tableId": "B" + strconv.Itoa(k)})
		if r.Status == 200 {
			var out struct{ SessionID, PIN string }
			r.json(t, &out)
			mu.Lock()
			sessions[k] = session{ID: out.SessionID, PIN: out.PIN, Table: "B" + strconv.Itoa(k)}
			mu.Unlock()
		}
		return r
	}
	if burst("sessions right after start", openOn) < 1 {
		t.Fatalf("sessions right after start: the follower dialled nothing (its pool should be cold)")
	}

	// The menu goes in through the leader, so the follower's pool stays
	// unused and closes.
	s.mustStaff(li, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "category": "noodles", "price": 900})
	s.c.WaitConverged(20 * time.Second)
	afterIdle("guest orders after idle", func(k int) resp {
		return s.guest(sessions[k]).order(f, newKey(), cart(line("ramen", 1)))
	})
	afterIdle("sessions after idle", func(k int) resp { return openOn(k) })
}

// peerDials reads masterorder_peer_dials_total from node i's /metrics.
func (s *store) peerDials(i int) int {
	s.t.Helper()
	r := s.do(i, "GET", "/metrics", nil, nil)
	if r.Status != 200 {
		s.t.Fatalf("metrics on node %d: %d", i, r.Status)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "masterorder_peer_dials_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatal(err)
			}
			return int(n)
		}
	}
	s.t.Fatalf("node %d has no masterorder_peer_dials_total", i)
	return 0
}
