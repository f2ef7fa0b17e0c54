package backoff

import (
	"context"
	"testing"
	"time"
)

func TestFullIsCappedJitter(t *testing.T) {
	const first, most = 200 * time.Millisecond, 5 * time.Second
	for failures := 0; failures < 100; failures++ {
		ceil := most
		if failures < 6 {
			ceil = min(most, first<<(max(failures, 1)-1))
		}
		var top time.Duration
		for range 200 {
			d := Full(failures, first, most)
			if d <= 0 || d > ceil {
				t.Fatalf("Full(%d) = %v, want in (0, %v]", failures, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/4 { // 200 draws all below a quarter: not full jitter
			t.Errorf("Full(%d): largest of 200 draws %v, cap %v", failures, top, ceil)
		}
	}
	if d := Full(3, first, 0); d != 0 {
		t.Errorf("no cap: %v, want 0", d)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep without a cancelled context answered false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with a cancelled context answered true")
	}
}

// TestSleepNoneAnswersTheContext: a wait of zero or less does not wait and
// still says whether ctx has ended (the bench's pauses rely on it).
func TestSleepNoneAnswersTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	for _, d := range []time.Duration{0, -time.Second} {
		if !Sleep(ctx, d) {
			t.Errorf("Sleep(%v) with a live context answered false", d)
		}
	}
	cancel()
	for i := 0; i < 100; i++ { // a zero timer and a closed Done must not race
		if Sleep(ctx, 0) {
			t.Fatal("Sleep(0) with a cancelled context answered true")
		}
	}
}
