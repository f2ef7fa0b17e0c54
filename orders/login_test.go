package orders_test

import (
	"sync"
	"testing"
	"time"

	"masterorder/orders/staffauth"
)

// A script fires 64 wrong logins at once from one address: the limiter
// counts attempts in flight, so at most its limit are evaluated (bcrypt
// run) and the rest are refused up front; then, switching boxes, the
// cluster-wide count locks the address on every node — the right password
// included.
func TestParallelWrongLoginsEvaluateAtMostTheLimit(t *testing.T) {
	s := startStore(t, 3, nil)
	var mu sync.Mutex
	byStatus := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.do(0, "POST", "/api/staff/login", nil, map[string]string{"password": "wrong-password-guess"})
			mu.Lock()
			byStatus[r.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("64 parallel wrong logins on one node: %v", byStatus)
	if byStatus[401] > staffauth.DefaultMaxFailures || byStatus[401]+byStatus[429] != 64 {
		t.Errorf("evaluated %d wrong passwords of 64 (limit %d): %v", byStatus[401], staffauth.DefaultMaxFailures, byStatus)
	}

	// Round-robin over the other boxes: the cluster-wide count stops it.
	evaluated := 0
	for i := 0; i < 20; i++ {
		r := s.do(1+i%2, "POST", "/api/staff/login", nil, map[string]string{"password": "wrong-password-guess"})
		if r.Status == 401 {
			evaluated++
		} else if r.Status != 429 {
			t.Fatalf("wrong login: %d %s", r.Status, r.Body)
		}
	}
	if total := byStatus[401] + evaluated; total > 10+2 {
		t.Errorf("%d wrong passwords evaluated across the cluster", total)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 3; i++ {
		for {
			r := s.do(i, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
			if r.Status == 429 && r.reason(t) == "LOGIN_LOCKED" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d after the lock: %d %s", i, r.Status, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
