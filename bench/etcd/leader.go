package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Leader addressing (--leader-only): every caller puts through the client
// of the member that is leader, as `masterorder bench --closed-loop
// --leader-only` sends every order to the Raft leader. The leader is the
// member whose Status names itself (Header.MemberId == Leader); after a
// failed put, and every second, the tracker asks again and follows a new
// one.

// memberStatus is what one member's Status says: its own id, the leader
// it knows (0: none) and its Raft term; err when it did not answer.
type memberStatus struct {
	id, leader, term uint64
	err              error
}

// pickLeader is the member that names itself leader; of two such (an old
// leader not yet deposed), the higher term. -1 when none does.
func pickLeader(st []memberStatus) int {
	best := -1
	for i, s := range st {
		if s.err != nil || s.id == 0 || s.leader != s.id {
			continue
		}
		if best < 0 || s.term > st[best].term {
			best = i
		}
	}
	return best
}

var errNoLeader = errors.New("no member names itself the leader")

// leaderTracker knows which member leads.
type leaderTracker struct {
	names  []string
	status func(ctx context.Context, i int) memberStatus

	cur atomic.Int64  // index into names
	gen atomic.Uint64 // bumped by every search, whether it found one or not

	mu      sync.Mutex // one search at a time
	hmu     sync.Mutex
	history []string // every member puts went to as the leader, in turn
}

// current is the leader's index and the search it came from.
func (lt *leaderTracker) current() (int, uint64) {
	g := lt.gen.Load()
	return int(lt.cur.Load()), g
}

func (lt *leaderTracker) leaders() []string {
	lt.hmu.Lock()
	defer lt.hmu.Unlock()
	return append([]string(nil), lt.history...)
}

// resolve asks every member until one leads or wait has passed. seen is
// the search the caller knew of: if another finished since, its answer
// stands (many callers failing at once make one search). It reports
// whether the leader is now another member than before.
func (lt *leaderTracker) resolve(ctx context.Context, seen uint64, wait time.Duration) (changed bool, err error) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.gen.Load() != seen {
		return false, nil
	}
	deadline := time.Now().Add(wait)
	for {
		st := make([]memberStatus, len(lt.names))
		var wg sync.WaitGroup
		for i := range st {
			wg.Go(func() { st[i] = lt.status(ctx, i) })
		}
		wg.Wait()
		if i := pickLeader(st); i >= 0 {
			first := len(lt.leaders()) == 0
			before := int(lt.cur.Load())
			lt.cur.Store(int64(i))
			lt.gen.Add(1)
			if first || i != before {
				lt.hmu.Lock()
				lt.history = append(lt.history, lt.names[i])
				lt.hmu.Unlock()
				return !first, nil
			}
			return false, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			// The callers waiting for this search keep the last leader
			// rather than each searching as long again.
			lt.gen.Add(1)
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, fmt.Errorf("%w within %s", errNoLeader, wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stillLeader asks the current leader whether it still leads, and
// searches again when it does not (or does not answer).
func (lt *leaderTracker) stillLeader(ctx context.Context) {
	i, g := lt.current()
	if s := lt.status(ctx, i); s.err == nil && s.id != 0 && s.leader == s.id {
		return
	}
	_, _ = lt.resolve(ctx, g, 3*time.Second)
}

// watch runs stillLeader every period until ctx ends.
func (lt *leaderTracker) watch(ctx context.Context, period time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				lt.stillLeader(ctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// addressingText says where the puts went, for the text report.
func addressingText(addressing string, leaders []string, members int) string {
	if addressing != "leader" {
		return fmt.Sprintf("spread: callers round the %d members' clients, a follower passing its puts to the leader (--leader-only: all through the leader's)", members)
	}
	s := "leader: every put through the leader's client (--leader-only)"
	if len(leaders) > 0 {
		s += "; leader " + strings.Join(leaders, ", then ")
	}
	if len(leaders) > 1 {
		s += fmt.Sprintf(" (changed %d× during the run)", len(leaders)-1)
	}
	return s
}
