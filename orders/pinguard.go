package orders

import (
	"context"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"
)

// pinGuard keeps PIN lockouts honest against a phone that guesses fast.
//
// The counts live in the replicated KV, but a wrong PIN reaches this
// node's replica only after its failure command has been committed and
// applied here. Checked against the replica alone, a burst of concurrent
// guesses is evaluated before any of its failures land, and a right PIN
// in the burst gets through long after the limit (a phone firing all
// 10,000 PINs at once would find it). So each node also counts the wrong
// PINs it has evaluated whose failures it cannot yet see, and evaluates
// attempts one at a time against replica + pending. A node then evaluates
// at most the limit per client and per session; the others' guesses reach
// it within one commit.
//
// A node whose replica lags can also miss a lock that another node's
// failures set: when there is any sign of guessing (a live failure counter
// here, or a wrong PIN of ours in flight) it catches up with the leader
// (ReadIndex) before it decides. Sessions nobody mistyped pay nothing.
type pinGuard struct {
	mu      sync.Mutex
	pending map[string]int // wrong PINs in flight, by failure-counter key
}

// pinCount reads a failure counter from the local replica.
func (s *Service) pinCount(key string) int {
	e, live, err := s.node.KV().Get(key)
	if err != nil || !live {
		return 0
	}
	n := 0
	fmt.Sscan(string(e.Value), &n)
	return n
}

// pinSuspect reports whether client or session has recent wrong PINs:
// then this node catches up before it judges the next attempt.
func (s *Service) pinSuspect(client, sessionID string) bool {
	ck, sk := keyPINFail("client", client), keyPINFail("session", sessionID)
	s.pins.mu.Lock()
	inFlight := s.pins.pending[ck] > 0 || s.pins.pending[sk] > 0
	s.pins.mu.Unlock()
	return inFlight || s.pinCount(ck) > 0 || s.pinCount(sk) > 0
}

// pinCatchUp brings the replica up to the leader's commit index before a
// PIN is judged. Without a quorum nothing new can commit, so after a short
// wait the local replica is as good as any.
func (s *Service) pinCatchUp(ctx context.Context, client, sessionID string) {
	if !s.pinSuspect(client, sessionID) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s.node.ConsistentRead(ctx)
}

// pinLocked reports a live lockout of client or session and how long it
// has left.
func (s *Service) pinLocked(client, sessionID string) (time.Duration, bool) {
	for _, k := range []string{keyPINLock("client", client), keyPINLock("session", sessionID)} {
		if e, live, err := s.node.KV().Get(k); err == nil && live {
			return max(time.Duration(e.ExpiresAt-s.node.FSMNow())*time.Millisecond, time.Second), true
		}
	}
	return 0, false
}

// pinAttempt judges one attempt against the lockouts and compares the PIN,
// one attempt at a time on this node. locked > 0: refuse with that
// Retry-After. A wrong PIN is counted as pending at once; call release
// when its failure is in this node's replica (or was not committed).
func (s *Service) pinAttempt(client, sessionID, pin, want string) (right bool, locked time.Duration, release func()) {
	ck, sk := keyPINFail("client", client), keyPINFail("session", sessionID)
	g := &s.pins
	g.mu.Lock()
	defer g.mu.Unlock()
	if wait, ok := s.pinLocked(client, sessionID); ok {
		return false, wait, nil
	}
	if s.pinCount(ck)+g.pending[ck] >= pinClientLimit || s.pinCount(sk)+g.pending[sk] >= pinSessionLimit {
		// The lock is being committed by failures in flight.
		return false, pinLockDurationMs * time.Millisecond, nil
	}
	if subtle.ConstantTimeCompare([]byte(pin), []byte(want)) == 1 {
		return true, 0, nil
	}
	if g.pending == nil {
		g.pending = map[string]int{}
	}
	g.pending[ck]++
	g.pending[sk]++
	var once sync.Once
	return false, 0, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, k := range []string{ck, sk} {
				if g.pending[k]--; g.pending[k] <= 0 {
					delete(g.pending, k)
				}
			}
		})
	}
}
