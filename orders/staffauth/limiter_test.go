package staffauth

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestLimiterLocksAfterFailuresAndUnlocks(t *testing.T) {
	clk := newClock()
	l := &LoginLimiter{Now: clk.Now}
	addr := "192.168.1.50:51234"
	for i := 1; i < DefaultMaxFailures; i++ {
		if locked, _ := l.Failure(addr); locked {
			t.Fatalf("locked after %d failures", i)
		}
		if ok, _ := l.Allow(addr); !ok {
			t.Fatalf("not allowed after %d failures", i)
		}
		clk.Advance(5 * time.Second)
	}
	locked, retry := l.Failure(addr)
	if !locked || retry != time.Minute {
		t.Fatalf("5th failure: locked=%v retry=%v", locked, retry)
	}
	// Locked from any source port of that address; others unaffected.
	if ok, retry := l.Allow("192.168.1.50:40000"); ok || retry != time.Minute {
		t.Errorf("Allow while locked = %v, %v", ok, retry)
	}
	if ok, _ := l.Allow("192.168.1.51:40000"); !ok {
		t.Error("another address is locked")
	}
	clk.Advance(59 * time.Second)
	if ok, retry := l.Allow(addr); ok || retry != time.Second {
		t.Errorf("Allow 1s before unlock = %v, %v", ok, retry)
	}
	// Further failures while locked do not extend the lock.
	if locked, _ := l.Failure(addr); !locked {
		t.Error("failure while locked reported unlocked")
	}
	clk.Advance(time.Second)
	if ok, _ := l.Allow(addr); !ok {
		t.Error("still locked after the lockout")
	}
	// A fresh count starts after the lockout.
	if locked, _ := l.Failure(addr); locked {
		t.Error("locked again by one failure")
	}
}

func TestLimiterWindowSlidesOff(t *testing.T) {
	clk := newClock()
	l := &LoginLimiter{Now: clk.Now}
	for i := range 20 {
		if locked, _ := l.Failure("10.0.0.9"); locked {
			t.Fatalf("locked at failure %d spread over windows", i+1)
		}
		if (i+1)%(DefaultMaxFailures-1) == 0 {
			clk.Advance(time.Minute) // the window ends before the 5th
		}
	}
}

func TestLimiterSuccessResets(t *testing.T) {
	clk := newClock()
	l := &LoginLimiter{Now: clk.Now}
	for range DefaultMaxFailures - 1 {
		l.Failure("10.0.0.9")
	}
	l.Success("10.0.0.9")
	if locked, _ := l.Failure("10.0.0.9"); locked {
		t.Error("success did not reset the count")
	}
}

func TestLimiterIPv6CountsPerPrefix(t *testing.T) {
	clk := newClock()
	l := &LoginLimiter{Now: clk.Now, MaxFailures: 3}
	l.Failure("[2001:db8:1:2::a]:1000")
	l.Failure("[2001:db8:1:2::b]:1000")
	if locked, _ := l.Failure("[2001:db8:1:2:ffff::c]:1000"); !locked {
		t.Error("addresses of one /64 counted apart")
	}
	if ok, _ := l.Allow("[2001:db8:1:3::a]:1000"); !ok {
		t.Error("another /64 is locked")
	}
}

func TestLimiterBoundedEvictsOldest(t *testing.T) {
	clk := newClock()
	l := &LoginLimiter{Now: clk.Now, MaxEntries: 3, MaxFailures: 2}
	l.Failure("10.0.0.1") // oldest
	l.Failure("10.0.0.2")
	l.Failure("10.0.0.3")
	l.Failure("10.0.0.2") // locks .2 and touches it
	l.Failure("10.0.0.4") // evicts .1
	if n := l.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	if ok, _ := l.Allow("10.0.0.2"); ok {
		t.Error("recently touched locked entry was evicted")
	}
	if locked, _ := l.Failure("10.0.0.1"); locked {
		t.Error(".1 should have been forgotten")
	}
	// Allow never adds entries, so probing cannot fill the table.
	for i := range 100 {
		l.Allow(fmt.Sprintf("10.1.0.%d", i))
	}
	if n := l.Len(); n != 3 {
		t.Errorf("Len after Allow probes = %d", n)
	}
}

func TestLimiterConcurrent(t *testing.T) {
	l := &LoginLimiter{MaxEntries: 50}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				addr := fmt.Sprintf("10.%d.%d.1:1", g, i%80)
				l.Allow(addr)
				l.Failure(addr)
				if i%7 == 0 {
					l.Success(addr)
				}
			}
		}()
	}
	wg.Wait()
	if n := l.Len(); n > 50 {
		t.Errorf("Len = %d exceeds MaxEntries", n)
	}
}
