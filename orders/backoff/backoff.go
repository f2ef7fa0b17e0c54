// Package backoff is the wait between retries of the leader's senders
// (cloud sync, kitchen printers): exponential with full jitter, so senders
// that failed together do not retry together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Full is the wait after failures in a row: uniform in (0, ceil], where
// ceil is first·2^(failures-1), at most most. It is 0 when most is not
// positive.
func Full(failures int, first, most time.Duration) time.Duration {
	ceil := most
	if n := max(failures, 1) - 1; n < 32 {
		if c := first << n; c > 0 && c < ceil {
			ceil = c
		}
	}
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil))) + 1
}

// Sleep waits d, or until ctx ends: false when ctx ended first (or had
// already ended, whatever d).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
