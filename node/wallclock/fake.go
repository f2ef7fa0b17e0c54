package wallclock

import (
	"sync"
	"time"
)

// Fake is a box's wall clock for tests: the real clock plus an offset,
// which Set moves (as clock_settime moves the kernel's). It counts how
// often it was set and remembers if it ever went back.
type Fake struct {
	mu     sync.Mutex
	offset time.Duration
	sets   int
	back   bool
}

// NewFake returns a clock that now reads at.
func NewFake(at time.Time) *Fake { return &Fake{offset: time.Until(at)} }

// Now reads the clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Add(f.offset)
}

// Set steps the clock to t.
func (f *Fake) Set(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if t.Before(now.Add(f.offset)) {
		f.back = true
	}
	f.offset = t.Sub(now)
	f.sets++
	return nil
}

// Jump moves the clock as something outside the box would (NTP stepping
// it, the test's power cut): not counted as a Set.
func (f *Fake) Jump(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offset = time.Until(t)
}

// Sets is how often Set was called.
func (f *Fake) Sets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sets
}

// WentBack reports whether Set ever moved the clock backwards.
func (f *Fake) WentBack() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.back
}
