package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPickLeader(t *testing.T) {
	down := memberStatus{err: errors.New("unavailable")}
	for _, c := range []struct {
		name string
		st   []memberStatus
		want int
	}{
		{"the second leads", []memberStatus{{id: 1, leader: 2, term: 3}, {id: 2, leader: 2, term: 3}, {id: 3, leader: 2, term: 3}}, 1},
		{"one down", []memberStatus{down, {id: 2, leader: 3, term: 4}, {id: 3, leader: 3, term: 4}}, 2},
		{"an old leader not yet deposed", []memberStatus{{id: 1, leader: 1, term: 3}, {id: 2, leader: 3, term: 4}, {id: 3, leader: 3, term: 4}}, 2},
		{"an election", []memberStatus{{id: 1, leader: 0, term: 5}, {id: 2, leader: 0, term: 5}, down}, -1},
		{"no answer at all", []memberStatus{down, down, down}, -1},
		{"an empty answer", []memberStatus{{}, {}, {}}, -1},
	} {
		if got := pickLeader(c.st); got != c.want {
			t.Errorf("%s: pickLeader = %d, want %d", c.name, got, c.want)
		}
	}
}

// fakeCluster answers Status as three members would, the leader movable.
type fakeCluster struct {
	leader atomic.Int64 // index; -1 none
	calls  atomic.Int64
}

func (f *fakeCluster) status(_ context.Context, i int) memberStatus {
	f.calls.Add(1)
	l := uint64(0)
	if x := f.leader.Load(); x >= 0 {
		l = uint64(x) + 1
	}
	return memberStatus{id: uint64(i) + 1, leader: l, term: 7}
}

func TestLeaderTrackerFollowsTheLeader(t *testing.T) {
	f := &fakeCluster{}
	f.leader.Store(1)
	lt := &leaderTracker{names: []string{"m1", "m2", "m3"}, status: f.status}
	ctx := context.Background()
	if changed, err := lt.resolve(ctx, 0, time.Second); err != nil || changed {
		t.Fatalf("first search: changed %v, %v", changed, err)
	}
	if i, _ := lt.current(); i != 1 {
		t.Fatalf("leader %d, want 1 (m2)", i)
	}
	// Still the leader: one question to it, no search.
	before := f.calls.Load()
	lt.stillLeader(ctx)
	if n := f.calls.Load() - before; n != 1 || len(lt.leaders()) != 1 {
		t.Errorf("a recheck with no change asked %d times, leaders %v", n, lt.leaders())
	}
	// The leadership moves: the recheck follows it.
	f.leader.Store(2)
	lt.stillLeader(ctx)
	if i, _ := lt.current(); i != 2 || !slices.Equal(lt.leaders(), []string{"m2", "m3"}) {
		t.Errorf("leader %d, leaders %v after it moved to m3", i, lt.leaders())
	}
	// Callers failing at once: the first searches, the others keep its
	// answer.
	_, g := lt.current()
	f.leader.Store(0)
	if changed, err := lt.resolve(ctx, g, time.Second); err != nil || !changed {
		t.Errorf("search after a failed put: changed %v, %v", changed, err)
	}
	f.leader.Store(1)
	if changed, err := lt.resolve(ctx, g, time.Second); err != nil || changed {
		t.Errorf("an overtaken search: changed %v, %v", changed, err)
	}
	if i, _ := lt.current(); i != 0 {
		t.Errorf("an overtaken search moved the leader to %d", i)
	}
	// No leader: an error within the wait, the last leader kept.
	f.leader.Store(-1)
	_, g = lt.current()
	if _, err := lt.resolve(ctx, g, 300*time.Millisecond); !errors.Is(err, errNoLeader) {
		t.Errorf("no leader: %v", err)
	}
	if i, _ := lt.current(); i != 0 {
		t.Errorf("leader %d after a failed search, want the last one (0)", i)
	}
	// The callers that failed meanwhile do not each search as long again.
	if changed, err := lt.resolve(ctx, g, time.Hour); changed || err != nil {
		t.Errorf("a caller waiting on a failed search: changed %v, %v", changed, err)
	}
	txt := addressingText("leader", lt.leaders(), 3)
	if !strings.Contains(txt, "leader m2, then m3, then m1 (changed 2× during the run)") {
		t.Errorf("text %q", txt)
	}
	if txt := addressingText("spread", nil, 3); !strings.HasPrefix(txt, "spread: callers round the 3 members' clients") {
		t.Errorf("text %q", txt)
	}
}
