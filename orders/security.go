package orders

import (
	"fmt"
	"net/http"
	"strings"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Locks, PINs, tokens and staff logins: the commands that guard the store.

type forceReleaseCmd struct {
	Key  string `json:"key"`
	Node string `json:"node"`
}

// forceReleaseWith is the forceRelease handler; st is the admission
// state, where version 3 finds a burst window held in a record
// (windowrecords.go).
func forceReleaseWith(st *admitState) applyFunc[forceReleaseCmd] {
	return func(ctx *raftfsm.ApplyContext, tx *kv.Tx, c forceReleaseCmd) ([]byte, error) {
		return applyForceRelease(ctx, tx, st, c)
	}
}

func applyForceRelease(ctx *raftfsm.ApplyContext, tx *kv.Tx, st *admitState, c forceReleaseCmd) ([]byte, error) {
	if ctx.Version >= 2 && !releasableKey(c.Key) {
		return reject(http.StatusBadRequest, "INVALID_KEY")
	}
	e, live := tx.Get(c.Key)
	if live {
		if _, err := tx.Delete(c.Key); err != nil {
			return nil, err
		}
	}
	if session, burst := strings.CutPrefix(c.Key, prefixBurst); burst && ctx.Version >= forceReleaseRecordVersion {
		if err := st.ready(ctx, tx); err != nil {
			return nil, fmt.Errorf("build the admission state: %w", err)
		}
		index, found, err := st.releaseBurstRecord(ctx, tx, session)
		if err != nil {
			return nil, err
		}
		if found && (!live || index > e.Revision) {
			e.Revision, live = index, true
		}
	}
	if !live {
		return reject(http.StatusNotFound, "LOCK_NOT_FOUND")
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, ReasonCode: "LOCK_FORCE_RELEASED", Node: c.Node,
		SessionID: sessionOfLock(c.Key), Detail: c.Key}); err != nil {
		return nil, err
	}
	return ok(map[string]any{"key": c.Key, "released": true, "revision": e.Revision})
}

// releasableKey: the locks API releases only stuck locks, PIN lockouts
// and burst windows; the other keys (revoked tokens, cached results,
// cloud state) are the system's own.
func releasableKey(key string) bool {
	for _, p := range []string{prefixLock, prefixPINLock, prefixBurst} {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	return false
}

// PIN limits from API.md: 10 wrong PINs per client within 10 minutes, or
// 50 per session, lock that client or session out for 10 minutes.
const (
	pinWindowMs       = 10 * 60 * 1000
	pinClientLimit    = 10
	pinSessionLimit   = 50
	pinLockDurationMs = 10 * 60 * 1000
)

type pinFailureCmd struct {
	SessionID string `json:"sessionId"`
	Client    string `json:"client"` // client id, or the remote address
	// Addr is the remote address, counted too so rotating client ids gains
	// nothing ("" for loopback and in commands from older nodes).
	Addr string `json:"addr,omitempty"`
	Node string `json:"node"`
}

type pinFailureResult struct {
	Locked bool `json:"locked"`
}

func applyPINFailure(ctx *raftfsm.ApplyContext, tx *kv.Tx, c pinFailureCmd) ([]byte, error) {
	locked := false
	for _, scope := range pinScopes(c.Client, c.Addr, c.SessionID) {
		count, err := bumpCounter(tx, scope.failKey, pinWindowMs)
		if err != nil {
			return nil, err
		}
		if count >= scope.limit {
			if err := tx.Put(scope.lockKey, nil, msDuration(pinLockDurationMs)); err != nil {
				return nil, err
			}
			locked = true
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, ClientID: c.Client, SessionID: c.SessionID,
		ReasonCode: "INVALID_PIN", Node: c.Node}); err != nil {
		return nil, err
	}
	return ok(pinFailureResult{Locked: locked})
}

// bumpCounter increments a counter that lapses windowMs after its first
// increment.
func bumpCounter(tx *kv.Tx, key string, windowMs int64) (int, error) {
	count, ttl := 0, windowMs
	if e, live := tx.Get(key); live {
		fmt.Sscan(string(e.Value), &count)
		ttl = e.ExpiresAt - tx.Now()
	}
	count++
	return count, tx.Put(key, []byte(fmt.Sprint(count)), msDuration(ttl))
}

type revokeTokenCmd struct {
	TokenID string `json:"tokenId"`
	TTLms   int64  `json:"ttlMs"`
}

func applyRevokeToken(ctx *raftfsm.ApplyContext, tx *kv.Tx, c revokeTokenCmd) ([]byte, error) {
	if c.TTLms <= 0 {
		c.TTLms = 1
	}
	if err := tx.Put(keyRevoked(c.TokenID), nil, msDuration(c.TTLms)); err != nil {
		return nil, err
	}
	return ok(map[string]bool{"revoked": true})
}

type loginFailureCmd struct {
	Addr string `json:"addr"`
	Node string `json:"node"`
}

func applyLoginFailure(ctx *raftfsm.ApplyContext, tx *kv.Tx, c loginFailureCmd) ([]byte, error) {
	if !validText(c.Addr, 64, true) {
		return ok(struct{}{})
	}
	n, err := bumpCounter(tx, keyLoginFail(c.Addr), loginWindowMs)
	if err != nil {
		return nil, err
	}
	if n >= loginAddrLimit {
		if err := tx.Put(keyLoginLock(c.Addr), nil, msDuration(loginLockMs)); err != nil {
			return nil, err
		}
	}
	all, err := bumpCounter(tx, keyLoginFailAll, loginWindowMs)
	if err != nil {
		return nil, err
	}
	if all >= loginBudget {
		if err := tx.Put(keyLoginBudget, nil, msDuration(loginWindowMs)); err != nil {
			return nil, err
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, ReasonCode: "INVALID_PASSWORD", Node: c.Node, Detail: "from " + c.Addr}); err != nil {
		return nil, err
	}
	return ok(struct{}{})
}

type resetPINCmd struct {
	SessionID string `json:"sessionId"`
	PIN       string `json:"pin"`
	Node      string `json:"node"`
}

func applyResetPIN(ctx *raftfsm.ApplyContext, tx *kv.Tx, c resetPINCmd) ([]byte, error) {
	if !validSessionID(c.SessionID) || len(c.PIN) != 4 {
		return reject(http.StatusBadRequest, "INVALID_REQUEST")
	}
	sess, exists, err := store.GetSession(ctx.DB, c.SessionID)
	if err != nil {
		return nil, err
	}
	if !exists {
		return reject(http.StatusNotFound, "SESSION_NOT_FOUND")
	}
	if sess.Status != store.SessionActive {
		return reject(http.StatusGone, "SESSION_CLOSED")
	}
	if _, err := ctx.DB.Exec(`UPDATE sessions SET pin = ? WHERE session_id = ?`, c.PIN, c.SessionID); err != nil {
		return nil, err
	}
	for _, k := range []string{keyPINLock("session", c.SessionID), keyPINFail("session", c.SessionID)} {
		if _, live := tx.Get(k); live {
			if _, err := tx.Delete(k); err != nil {
				return nil, err
			}
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, SessionID: c.SessionID, ReasonCode: "PIN_RESET", Node: c.Node}); err != nil {
		return nil, err
	}
	return ok(sessionOpened{SessionID: c.SessionID, TableID: sess.TableID, PIN: c.PIN, Status: sess.Status})
}
