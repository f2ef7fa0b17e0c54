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

// pinScope is one failure-counter scope, its limit, and its keys.
type pinScope struct {
	name             string
	limit            int
	failKey, lockKey string
}

// pinScopes are the failure-counter scopes an attempt counts in: the
// client (id or address), the session, and — so rotating client ids gains
// a phone nothing — its remote address ("" for loopback: the box itself
// or a test's load generator, never a phone).
func pinScopes(client, addr, sessionID string) []pinScope {
	out := make([]pinScope, 0, 3)
	out = append(out, newPINScope("client", client, pinClientLimit), newPINScope("session", sessionID, pinSessionLimit))
	if addr != "" {
		out = append(out, newPINScope("addr", addr, pinClientLimit))
	}
	return out
}

func newPINScope(name, id string, limit int) pinScope {
	return pinScope{name: name, limit: limit, failKey: keyPINFail(name, id), lockKey: keyPINLock(name, id)}
}

// pinVerdict is what one PIN attempt comes to, in the order the answers
// are given: a live lockout (locked, PIN_LOCKED), a session that is not
// active (closed, SESSION_CLOSED), a lock being committed by failures in
// flight (locked), the right PIN (right), or a wrong one (release).
type pinVerdict struct {
	right  bool
	locked time.Duration
	closed bool
	// release, for a wrong PIN: call it when the failure is in this
	// node's replica (or was not committed).
	release func()
}

// pinJudge judges one attempt at sess's PIN, one attempt at a time on
// this node, against the lockouts and the failure counters (replica +
// pending) read in one view of the replica. When there is any sign of
// guessing (a wrong PIN of this node's in flight, or a live failure
// counter of the client or the session) the replica first catches up with
// the leader's commit index, outside the guard's lock (without a quorum
// nothing new can commit, so after a short wait the local replica is as
// good as any), and the view is read again. Sessions nobody mistyped pay
// one view. A wrong PIN is counted as pending at once.
func (s *Service) pinJudge(ctx context.Context, client, addr string, sess store.Session, pin string) pinVerdict {
	scopes := pinScopes(client, addr, sess.SessionID)
	g := &s.pins
	for caughtUp := false; ; caughtUp = true {
		g.mu.Lock()
		var expiresAt int64
		lockedOut, suspect, full := false, false, false
		s.node.KV().Read(func(tx *kv.Tx) {
			expiresAt, lockedOut = pinLockIn(tx, scopes)
			for _, sc := range scopes {
				n, p := pinCount(tx, sc.failKey), g.pending[sc.failKey]
				// The client and the session are where a guesser shows.
				suspect = suspect || (sc.name != "addr" && n+p > 0)
				full = full || n+p >= sc.limit
			}
		})
		if !caughtUp && suspect {
			g.mu.Unlock()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			s.node.ConsistentRead(cctx)
			cancel()
			continue
		}
		v := s.pinDecideLocked(scopes, expiresAt, lockedOut, full, sess, pin)
		g.mu.Unlock()
		return v
	}
}

// pinDecideLocked turns one view's findings into the verdict (s.pins.mu
// held).
func (s *Service) pinDecideLocked(scopes []pinScope, expiresAt int64, lockedOut, full bool, sess store.Session, pin string) pinVerdict {
	if wait, ok := s.lockWait(expiresAt, lockedOut); ok {
		return pinVerdict{locked: wait}
	}
	if sess.Status != store.SessionActive {
		return pinVerdict{closed: true}
	}
	if full {
		// The lock is being committed by failures in flight.
		return pinVerdict{locked: pinLockDurationMs * time.Millisecond}
	}
	if subtle.ConstantTimeCompare([]byte(pin), []byte(sess.PIN)) == 1 {
		return pinVerdict{right: true}
	}
	g := &s.pins
	if g.pending == nil {
		g.pending = map[string]int{}
	}
	for _, sc := range scopes {
		g.pending[sc.failKey]++
	}
	var once sync.Once
	return pinVerdict{release: func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, sc := range scopes {
				if g.pending[sc.failKey]--; g.pending[sc.failKey] <= 0 {
					delete(g.pending, sc.failKey)
				}
			}
		})
	}}
}

// pinLockIn is the first live lockout among scopes in tx, in their order.
func pinLockIn(tx *kv.Tx, scopes []pinScope) (expiresAt int64, locked bool) {
	for _, sc := range scopes {
		if e, live := tx.Get(sc.lockKey); live {
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
