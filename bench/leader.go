package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Leader addressing (--leader-only): guests' phones reach the store by its
// one LAN name, which only the Raft leader answers (node/lanname), so in
// a store nearly every order arrives at the leader; a follower forwards an
// order only for a phone still holding an old address. With --leader-only
// the closed loop sends every order to the node that says it is the
// leader in its own GET /api/cluster/status, and follows it when it
// changes: at once after a refusal (a network error or a 5xx, what a
// phone sees during an election), and within leaderRecheck otherwise (a
// deposed leader forwards as a follower does, so without the recheck the
// run would go on through a follower unnoticed).

const (
	// defaultLeaderRecheck is how often the current leader is asked
	// whether it still is one (one status call on one node per period).
	defaultLeaderRecheck = time.Second
	// leaderResolveWait bounds one search for the leader during the run;
	// the callers keep the last leader meanwhile.
	leaderResolveWait = 3 * time.Second
)

// nodeRole is what one node says of itself in /api/cluster/status.
type nodeRole struct {
	State string `json:"state"`
	Term  uint64 `json:"term"`
	Stale bool   `json:"stale"`
}

// leaderTracker knows which of the run's nodes is the Raft leader.
type leaderTracker struct {
	r       *runner
	recheck time.Duration

	cur atomic.Int64  // index into r.urls
	gen atomic.Uint64 // bumped by every search, whether it found one or not

	mu      sync.Mutex // one search at a time
	hmu     sync.Mutex
	history []string // every leader orders were sent to, in turn
}

func newLeaderTracker(r *runner, recheck time.Duration) *leaderTracker {
	if recheck <= 0 {
		recheck = defaultLeaderRecheck
	}
	return &leaderTracker{r: r, recheck: recheck}
}

// current is the leader's index in r.urls and the search it came from.
func (lt *leaderTracker) current() (int, uint64) {
	g := lt.gen.Load()
	return int(lt.cur.Load()), g
}

// leaders is every node orders were sent to as the leader, in turn.
func (lt *leaderTracker) leaders() []string {
	lt.hmu.Lock()
	defer lt.hmu.Unlock()
	return append([]string(nil), lt.history...)
}

// roles asks every node for its own state, concurrently.
func (lt *leaderTracker) roles(ctx context.Context) []*nodeRole {
	out := make([]*nodeRole, len(lt.r.urls))
	var wg sync.WaitGroup
	for i, base := range lt.r.urls {
		wg.Go(func() { out[i], _ = lt.role(ctx, base) })
	}
	wg.Wait()
	return out
}

// role is one node's GET /api/cluster/status (the staff token: the full
// status, with state and term).
func (lt *leaderTracker) role(ctx context.Context, base string) (*nodeRole, error) {
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+lt.r.token)
	res, err := do(ctx, lt.r.client, min(lt.r.timeout, 5*time.Second), http.MethodGet, base+"/api/cluster/status", hdr, nil, false)
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, fmt.Errorf("%s/api/cluster/status: %s", base, res)
	}
	var s nodeRole
	if err := json.Unmarshal(res.body, &s); err != nil {
		return nil, fmt.Errorf("%s/api/cluster/status: %w", base, err)
	}
	return &s, nil
}

// pickLeader is the node that says it is the leader and can reach a
// quorum; of two such (an old leader not yet deposed), the higher term.
// -1 when none does.
func pickLeader(roles []*nodeRole) int {
	best := -1
	for i, s := range roles {
		if s == nil || s.State != "leader" || s.Stale {
			continue
		}
		if best < 0 || s.Term > roles[best].Term {
			best = i
		}
	}
	return best
}

var errNoLeader = errors.New("no node says it is the Raft leader")

// resolve searches for the leader until one is found or wait has passed,
// and sends every order to it from then on. seen is the search the caller
// knew of: if another search finished since, its answer stands (many
// callers refused at once make one search). It reports whether the
// leader is now another node than before.
func (lt *leaderTracker) resolve(ctx context.Context, seen uint64, wait time.Duration) (changed bool, err error) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.gen.Load() != seen {
		return false, nil
	}
	deadline := time.Now().Add(wait)
	for {
		if i := pickLeader(lt.roles(ctx)); i >= 0 {
			before := int(lt.cur.Load())
			first := len(lt.leaders()) == 0
			lt.cur.Store(int64(i))
			lt.gen.Add(1)
			if first || i != before {
				lt.hmu.Lock()
				lt.history = append(lt.history, lt.r.urls[i])
				lt.hmu.Unlock()
				return !first, nil
			}
			return false, nil
		}
		if time.Now().After(deadline) || !sleep(ctx, 100*time.Millisecond) {
			// The callers waiting for this search keep the last leader
			// rather than each searching as long again.
			lt.gen.Add(1)
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, fmt.Errorf("%w within %s (asked %d nodes)", errNoLeader, wait, len(lt.r.urls))
		}
	}
}

// stillLeader asks the current leader whether it still is one, and
// searches again when it is not (or does not answer).
func (lt *leaderTracker) stillLeader(ctx context.Context) {
	i, g := lt.current()
	if s, err := lt.role(ctx, lt.r.urls[i]); err == nil && s.State == "leader" && !s.Stale {
		return
	}
	lt.follow(ctx, g)
}

// follow searches for the leader again (resolve, bounded by
// leaderResolveWait) and reports whether it is now another node; a search
// that found none goes in the report's notes.
func (lt *leaderTracker) follow(ctx context.Context, seen uint64) (changed bool) {
	changed, err := lt.resolve(ctx, seen, leaderResolveWait)
	if err != nil && ctx.Err() == nil {
		lt.r.note("--leader-only: " + err.Error() + "; orders went on to the last leader meanwhile")
	}
	return changed
}

// watch runs stillLeader every lt.recheck until ctx ends.
func (lt *leaderTracker) watch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(lt.recheck)
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
