package node

import (
	"sync"
	"time"
)

// logThrottle bounds a log line that strangers can trigger at will: a
// phone on the store Wi-Fi can open connections to the Raft port as fast
// as it likes, and each refusal would otherwise write a line to the box's
// SD card. Up to burst lines per window pass; the next line that passes
// says how many were dropped in between.
type logThrottle struct {
	window time.Duration
	burst  int

	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

// allow reports whether to log now, and how many lines were dropped since
// the last one logged.
func (t *logThrottle) allow(now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.start) >= t.window {
		t.start, t.n = now, 0
	}
	if t.n >= t.burst {
		t.suppressed++
		return false, 0
	}
	t.n++
	dropped := t.suppressed
	t.suppressed = 0
	return true, dropped
}
