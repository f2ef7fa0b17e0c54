package node

import (
	"testing"
	"time"
)

// A box is cut off after grace without any sign of a leader: messages
// from one, and its own leadership, which a leader that has just handed
// over (a rolling update's transfer) holds instead of any message.
func TestCutOffCountsTheBoxsOwnLeadership(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	grace := 2 * time.Second
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	never := time.Time{}
	for _, c := range []struct {
		name                             string
		started, lastContact, leaderSeen time.Time
		want                             bool
	}{
		{"just started", ago(time.Second), never, never, false},
		{"started long ago, no leader ever", ago(time.Minute), never, never, true},
		{"a follower hearing its leader", ago(time.Minute), ago(100 * time.Millisecond), never, false},
		{"a follower whose leader went quiet", ago(time.Minute), ago(3 * time.Second), never, true},
		{"a leader that has just handed over", ago(time.Minute), ago(50 * time.Second), ago(10 * time.Millisecond), false},
		{"a leader elected at start that has just handed over", ago(time.Minute), never, ago(10 * time.Millisecond), false},
		{"a former leader, long alone", ago(time.Minute), ago(50 * time.Second), ago(5 * time.Second), true},
	} {
		if got := cutOffSince(now, grace, c.started, c.lastContact, c.leaderSeen); got != c.want {
			t.Errorf("%s: cut off %v, want %v", c.name, got, c.want)
		}
	}
}
