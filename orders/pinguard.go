package orders

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"masterorder/kv"
	"masterorder/orders/store"
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

// pinCount reads a failure counter from one view of the local replica.
func pinCount(tx *kv.Tx, key string) int {
	e, live := tx.Get(key)
	if !live {
		return 0
	}
	return parseCount(e.Value)
}

// parseCount reads a counter as applyPINFailure writes it (fmt.Sprint of
// an int): plain decimal digits are read directly, anything else as
// fmt.Sscan reads it (what this always did).
func parseCount(v []byte) int {
	if len(v) > 0 && len(v) <= 9 && (v[0] != '0' || len(v) == 1) {
		n := 0
		for _, c := range v {
			if c < '0' || c > '9' {
				n = -1
				break
			}
			n = n*10 + int(c-'0')
		}
		if n >= 0 {
			return n
		}
	}
	n := 0
	fmt.Sscan(string(v), &n)
	return n
}

// pinScope is one failure-counter scope and its limit.
type pinScope struct {
	name, id string
	limit    int
}

// pinScopes are the failure-counter scopes an attempt counts in: the
// client (id or address), the session, and — so rotating client ids gains
// a phone nothing — its remote address ("" for loopback: the box itself
// or a test's load generator, never a phone).
func pinScopes(client, addr, sessionID string) []pinScope {
	out := []pinScope{{"client", client, pinClientLimit}, {"session", sessionID, pinSessionLimit}}
	if addr != "" {
		out = append(out, pinScope{"addr", addr, pinClientLimit})
	}
	return out
}

// pinLockedCaughtUp reports a live lockout of client or session and how
// long it has left, as the replica has it after catching up when there is
// any sign of guessing: a wrong PIN of this node's in flight, or a live
// failure counter of the client or the session. Then the replica catches
// up with the leader's commit index before the lockouts are read (without
// a quorum nothing new can commit, so after a short wait the local
// replica is as good as any). Sessions nobody mistyped read the counters
// and the lockouts in one view of the replica.
func (s *Service) pinLockedCaughtUp(ctx context.Context, client, addr, sessionID string) (time.Duration, bool) {
	ck, sk := keyPINFail("client", client), keyPINFail("session", sessionID)
	s.pins.mu.Lock()
	suspect := s.pins.pending[ck] > 0 || s.pins.pending[sk] > 0
	s.pins.mu.Unlock()
	var expiresAt int64
	locked := false
	if !suspect {
		s.node.KV().Read(func(tx *kv.Tx) {
			if suspect = pinCount(tx, ck) > 0 || pinCount(tx, sk) > 0; !suspect {
				expiresAt, locked = pinLockIn(tx, pinScopes(client, addr, sessionID))
			}
		})
	}
	if !suspect {
		return s.lockWait(expiresAt, locked)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	s.node.ConsistentRead(cctx)
	cancel()
	return s.pinLocked(client, addr, sessionID)
}

// pinLocked reports a live lockout of client or session and how long it
// has left.
func (s *Service) pinLocked(client, addr, sessionID string) (time.Duration, bool) {
	var expiresAt int64
	locked := false
	s.node.KV().Read(func(tx *kv.Tx) { expiresAt, locked = pinLockIn(tx, pinScopes(client, addr, sessionID)) })
	return s.lockWait(expiresAt, locked)
}

// pinLockIn is the first live lockout among scopes in tx, in their order.
func pinLockIn(tx *kv.Tx, scopes []pinScope) (expiresAt int64, locked bool) {
	for _, sc := range scopes {
		if e, live := tx.Get(keyPINLock(sc.name, sc.id)); live {
			return e.ExpiresAt, true
		}
	}
	return 0, false
}

// lockWait is how long a lockout expiring at expiresAt has left (at least
// a second).
func (s *Service) lockWait(expiresAt int64, locked bool) (time.Duration, bool) {
	if !locked {
		return 0, false
	}
	return max(time.Duration(expiresAt-s.node.FSMNow())*time.Millisecond, time.Second), true
}

// pinAttempt judges one attempt against the lockouts and compares the PIN,
// one attempt at a time on this node. locked > 0: refuse with that
// Retry-After. A wrong PIN is counted as pending at once; call release
// when its failure is in this node's replica (or was not committed).
func (s *Service) pinAttempt(client, addr, sessionID, pin, want string) (right bool, locked time.Duration, release func()) {
	scopes := pinScopes(client, addr, sessionID)
	g := &s.pins
	g.mu.Lock()
	defer g.mu.Unlock()
	// The lockouts and the counters in one view of the replica.
	var expiresAt int64
	lockedOut, full := false, false
	s.node.KV().Read(func(tx *kv.Tx) {
		if expiresAt, lockedOut = pinLockIn(tx, scopes); lockedOut {
			return
		}
		for _, sc := range scopes {
			if k := keyPINFail(sc.name, sc.id); pinCount(tx, k)+g.pending[k] >= sc.limit {
				full = true
				return
			}
		}
	})
	if wait, ok := s.lockWait(expiresAt, lockedOut); ok {
		return false, wait, nil
	}
	if full {
		// The lock is being committed by failures in flight.
		return false, pinLockDurationMs * time.Millisecond, nil
	}
	if subtle.ConstantTimeCompare([]byte(pin), []byte(want)) == 1 {
		return true, 0, nil
	}
	if g.pending == nil {
		g.pending = map[string]int{}
	}
	for _, sc := range scopes {
		g.pending[keyPINFail(sc.name, sc.id)]++
	}
	var once sync.Once
	return false, 0, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, sc := range scopes {
				k := keyPINFail(sc.name, sc.id)
				if g.pending[k]--; g.pending[k] <= 0 {
					delete(g.pending, k)
				}
			}
		})
	}
}

// A guest who entered the right PIN gets a session credential (answer
// header X-Session-Credential) that its device sends from then on: it
// opens the session without the PIN and through a PIN lockout, so fifty
// wrong PINs from a stranger cannot lock the seated table out. It is an
// HMAC of the session and its current PIN: a new PIN (staff "unlock
// table") voids every credential of the old one.
const headerCredential = "X-Session-Credential"

func (s *Service) sessionCredential(sessionID, pin string) string {
	// One HMAC per order costs its key schedule and two SHA-256 states;
	// a pooled one is reset to the key's state instead (nothing of the
	// last session stays in it).
	m, _ := s.credMACs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.guestKey)
	} else {
		m.Reset()
	}
	io.WriteString(m, sessionID)
	m.Write([]byte{0})
	io.WriteString(m, pin)
	var sum [sha256.Size]byte
	out := base64.RawURLEncoding.EncodeToString(m.Sum(sum[:0]))
	s.credMACs.Put(m)
	return out
}

func (s *Service) validCredential(sess store.Session, cred string) bool {
	return cred != "" && len(cred) <= 64 && hmac.Equal([]byte(cred), []byte(s.sessionCredential(sess.SessionID, sess.PIN)))
}
