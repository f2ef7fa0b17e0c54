package node

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// manualWindows is a commitDelay whose windows close only when the test
// says so.
type manualWindows struct {
	mu     sync.Mutex
	closes []func()
	// now closes each window as it opens (a test that expects none must
	// fail, not hang).
	now bool
}

func (m *manualWindows) after(_ time.Duration, f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closes = append(m.closes, f)
	if m.now {
		go f() // after runs under the delay's lock, which f takes
	}
}

func (m *manualWindows) opened() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.closes)
}

func (m *manualWindows) close(i int) {
	m.mu.Lock()
	f := m.closes[i]
	m.mu.Unlock()
	f()
}

func newManualDelay(siblings int64) (*commitDelay, *manualWindows) {
	m := &manualWindows{}
	return &commitDelay{window: time.Hour, siblings: siblings, after: m.after}, m
}

// waitFor polls cond for up to 10 s (goroutines reaching a channel wait).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCommitDelayHoldsOnlyWithFourOthersInFlight(t *testing.T) {
	d, m := newManualDelay(4)
	m.now = true
	// One at a time, then four in flight together (three others each):
	// none is held.
	for i := 0; i < 3; i++ {
		d.enter()()
	}
	var leaves []func()
	for i := 0; i < 4; i++ {
		leaves = append(leaves, d.enter())
	}
	if d.held.Load() != 0 || m.opened() != 0 {
		t.Fatalf("held %d proposals, opened %d windows, with at most 3 others in flight", d.held.Load(), m.opened())
	}
	// The fifth has four others in flight: held.
	d.enter()()
	if d.held.Load() != 1 || m.opened() != 1 {
		t.Fatalf("with four others in flight: held %d, opened %d windows, want 1 and 1", d.held.Load(), m.opened())
	}
	for _, leave := range leaves {
		leave()
	}
	if got := d.inflight.Load(); got != 0 {
		t.Fatalf("in flight after every leave: %d", got)
	}
}

func TestCommitDelayReleasesAWindowTogether(t *testing.T) {
	d, m := newManualDelay(4)
	for i := 0; i < 4; i++ { // four others in flight: from now on, hold
		defer d.enter()()
	}
	const held = 6
	var released atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < held; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave := d.enter()
			released.Add(1)
			leave()
		}()
	}
	waitFor(t, "six proposals held", func() bool { return d.held.Load() == held })
	if m.opened() != 1 {
		t.Fatalf("%d windows for proposals arriving together, want 1", m.opened())
	}
	time.Sleep(20 * time.Millisecond) // a proposal that was not held would pass now
	if r := released.Load(); r != 0 {
		t.Fatalf("%d proposals passed before their window closed", r)
	}
	m.close(0)
	wg.Wait()
	if r := released.Load(); r != held {
		t.Fatalf("%d of %d released", r, held)
	}
	// The next proposal under load opens a window of its own.
	done := make(chan struct{})
	go func() { d.enter()(); close(done) }()
	waitFor(t, "a second window", func() bool { return m.opened() == 2 })
	m.close(1)
	<-done
}
