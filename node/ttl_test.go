package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// skewedClocks gives node i the wall clock time.Now()+offset[i].
func skewedClocks(offset []atomic.Int64) func(i int) node.Options {
	return func(i int) node.Options {
		return node.Options{WallClock: func() time.Time {
			return time.Now().Add(time.Duration(offset[i].Load()))
		}}
	}
}

// lanTimeouts restores the shipped Raft timeouts (nodetest relaxes them
// for busy test machines), for tests that time a leader change.
func lanTimeouts(_ int, c *node.Config) {
	d := node.Defaults()
	c.Raft.HeartbeatTimeout = d.Raft.HeartbeatTimeout
	c.Raft.ElectionTimeout = d.Raft.ElectionTimeout
	c.Raft.LeaderLeaseTimeout = d.Raft.LeaderLeaseTimeout
}

// A TTL is judged on FSM time: when the leader changes to a box whose wall
// clock is an hour behind, after a quiet spell with no command, a key
// neither vanishes early nor lives on: it lapses TTL after it was written.
func TestTTLSurvivesLeaderChangeToSkewedClock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL")
	}
	offset := make([]atomic.Int64, 3)
	c := nodetest.Start(t, 3, lanTimeouts, skewedClocks(offset), nil)
	li, leader := c.WaitLeader(5 * time.Second)
	for i := range offset {
		if i != li {
			offset[i].Store(int64(-time.Hour))
		}
	}
	const ttl = 4 * time.Second
	const quiet = 2 * time.Second
	ctx := context.Background()
	// The key is stamped between asked and written: "too early" is judged
	// from asked, "too late" from written, so neither check depends on how
	// long a loaded machine takes to commit it.
	asked := time.Now()
	if ok, err := leader.KV().SetIfAbsent(ctx, "lock:ttl", []byte("t"), ttl); err != nil || !ok {
		t.Fatalf("SetIfAbsent = %v, %v", ok, err)
	}
	written := time.Now()
	e, _, _ := leader.KV().Get("lock:ttl")
	t.Logf("written at FSM time %d, expires at %d", e.ExpiresAt-ttl.Milliseconds(), e.ExpiresAt)
	// When each box applied the write: a box's FSM clock between commands
	// runs from the instant it applied the last one, so a box that applied
	// the write late (a loaded machine) counts the TTL from then, and so
	// does a new leader's clock started from its estimate.
	seen := make([]time.Time, len(c.Nodes))
	for pending := len(seen); pending > 0; {
		pending = 0
		for i, n := range c.Nodes {
			if !seen[i].IsZero() {
				continue
			}
			if _, ok, _ := n.KV().Get("lock:ttl"); ok {
				seen[i] = time.Now()
			} else {
				pending++
			}
		}
		if time.Since(written) > ttl {
			t.Fatalf("a box had not applied the write %v after it was written", ttl)
		}
		time.Sleep(time.Millisecond)
	}

	// No command for a while, then the leader goes away.
	time.Sleep(quiet)
	c.StopNode(li)
	ni, nl := c.WaitLeader(10 * time.Second)
	t.Logf("node %d (wall clock -1h) leads %v after the write", ni, time.Since(written).Round(time.Millisecond))
	lastSeen := written
	for i, at := range seen {
		if i != li && at.After(lastSeen) {
			lastSeen = at
		}
		t.Logf("node %d applied the write %v after it was written", i, at.Sub(written).Round(time.Millisecond))
	}

	// Watch the key on every survivor until it lapses.
	// A live sighting is dated from before the reads and a lapse from
	// after them: a test goroutine starved for a while (a loaded machine)
	// then cannot look like a stretched TTL.
	var gone, lastLive time.Duration
	for {
		elapsed := time.Since(written)
		live := false
		for _, n := range c.Nodes {
			if n == nil {
				continue
			}
			if _, ok, _ := n.KV().Get("lock:ttl"); ok {
				live = true
			} else if sinceAsked := time.Since(asked); sinceAsked < ttl-200*time.Millisecond {
				t.Fatalf("key vanished %v after it was asked for with a TTL of %v", sinceAsked, ttl)
			}
		}
		if !live {
			gone = time.Since(written)
			break
		}
		lastLive = elapsed
		if elapsed > ttl+quiet+5*time.Second {
			t.Fatalf("key still live %v after it was written with a TTL of %v", elapsed, ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	liveAfterSeen := lastLive - lastSeen.Sub(written)
	t.Logf("key last seen live %v after it was written, %v after the last survivor applied it; gone at %v (TTL %v)",
		lastLive.Round(time.Millisecond), liveAfterSeen.Round(time.Millisecond), gone.Round(time.Millisecond), ttl)
	// The quiet spell before the leader change must not stretch the TTL:
	// the new leader's FSM clock moves on from its own estimate, which kept
	// running since it applied the last stamp. Counted from the last
	// survivor's apply, with slack for a slow race-enabled scheduler; the
	// stretch this guards against is the quiet spell plus the election.
	if liveAfterSeen > ttl+1500*time.Millisecond {
		t.Fatalf("key still live %v after the last survivor applied it; TTL %v was stretched", liveAfterSeen, ttl)
	}

	// The next holder of the lapsed lock gets a larger fencing token, in
	// the new term too.
	fence, ok, err := nl.KV().Lock(ctx, "lock:ttl", "t2", time.Minute)
	if err != nil || !ok || fence <= e.Revision {
		t.Fatalf("Lock after the lapse = fence %d, %v, %v; want a fence above %d", fence, ok, err, e.Revision)
	}
	if ok, err := nl.KV().Unlock(ctx, "lock:ttl", "t"); ok || err != nil {
		t.Fatalf("the lapsed holder released the new holder's lock: %v %v", ok, err)
	}

	// A key written under the new leader lapses on time too.
	asked = time.Now()
	if ok, err := nl.KV().SetIfAbsent(ctx, "lock:ttl2", []byte("t"), time.Second); err != nil || !ok {
		t.Fatalf("SetIfAbsent = %v, %v", ok, err)
	}
	written = time.Now()
	for {
		if _, ok, _ := nl.KV().Get("lock:ttl2"); !ok {
			break
		}
		if time.Since(written) > 3*time.Second {
			t.Fatal("key written under the skewed leader lives on")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(asked); d < 900*time.Millisecond {
		t.Fatalf("key written under the skewed leader lapsed %v after it was asked for, TTL 1s", d)
	}
	c.AssertIdentical(10 * time.Second)
}

// Before any command stamped FSM time, a node's estimate is 0, not "the
// last stamp plus the time since year 1" (which dated staff tokens
// centuries ahead on a fresh cluster's followers).
func TestFSMNowIsZeroBeforeAnyStamp(t *testing.T) {
	cfg := nodetest.Configs(t, 1, t.TempDir())[0]
	n, err := node.New(cfg, node.Options{Logger: nodetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if got := n.FSMNow(); got != 0 {
		t.Fatalf("FSMNow on a fresh node = %d, want 0", got)
	}
}

// A follower's estimate moves on between commands and never runs ahead
// of the leader's clock.
func TestFollowerFSMNowTracksLeaderWithoutCommands(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	_, leader := c.WaitLeader(5 * time.Second)
	c.WaitConverged(5 * time.Second)
	_, f := c.Follower()
	time.Sleep(300 * time.Millisecond)
	fNow := f.FSMNow()
	lNow := leader.FSMNow()
	if fNow > lNow {
		t.Fatalf("follower estimate %d runs ahead of the leader's clock %d", fNow, lNow)
	}
	if lNow-fNow > 250 {
		t.Fatalf("follower estimate %d lags the leader's clock %d by %d ms with no command for 300 ms", fNow, lNow, lNow-fNow)
	}
}
