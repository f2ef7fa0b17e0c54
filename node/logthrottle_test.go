package node

import (
	"testing"
	"time"
)

func TestLogThrottle(t *testing.T) {
	th := &logThrottle{window: time.Minute, burst: 3}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if ok, d := th.allow(t0.Add(time.Duration(i) * time.Second)); !ok || d != 0 {
			t.Fatalf("line %d: %v %d", i, ok, d)
		}
	}
	for i := 0; i < 5; i++ {
		if ok, _ := th.allow(t0.Add(10 * time.Second)); ok {
			t.Fatalf("line %d over the burst passed", i+4)
		}
	}
	// The next window lets lines through again and reports the dropped.
	if ok, d := th.allow(t0.Add(61 * time.Second)); !ok || d != 5 {
		t.Fatalf("after the window: %v, dropped %d; want true, 5", ok, d)
	}
	if ok, d := th.allow(t0.Add(62 * time.Second)); !ok || d != 0 {
		t.Fatalf("next: %v %d", ok, d)
	}
}
