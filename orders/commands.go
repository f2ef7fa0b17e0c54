// Package orders is the store's domain: catalog, stock, table sessions,
// the admission gate, placing and updating orders, checkout, audit, and
// their HTTP handlers. Every change is one Raft command applied by the
// handlers registered here; the FSM stays generic.
package orders

import (
	"encoding/json"
	"fmt"
	"strings"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Domain command types (32 and up; 1–31 belong to the cluster).
const (
	CmdUpsertMenu     raftfsm.CommandType = 32
	CmdSetStock       raftfsm.CommandType = 33
	CmdOpenSession    raftfsm.CommandType = 34
	CmdPlaceOrder     raftfsm.CommandType = 35
	CmdSetOrderStatus raftfsm.CommandType = 36
	CmdCheckoutBegin  raftfsm.CommandType = 37
	CmdCheckoutCancel raftfsm.CommandType = 38
	CmdCheckout       raftfsm.CommandType = 39
	CmdPINFailure     raftfsm.CommandType = 40
	CmdForceRelease   raftfsm.CommandType = 41
	CmdOutboxSynced   raftfsm.CommandType = 42
	CmdRevokeToken    raftfsm.CommandType = 43
	CmdHousekeeping   raftfsm.CommandType = 44
	CmdCloudState     raftfsm.CommandType = 45
)

// commandVersions is the newest version of each domain command this build
// applies and proposes (1 when absent). A handler applies every older
// version exactly as the build that introduced it (raftfsm.ApplyBatch,
// mixed versions). Version 2:
//   - setOrderStatus: a closed session's orders answer 410 SESSION_CLOSED;
//   - placeOrder: row 12 (PRICE_MISMATCH) before an unavailable item's
//     OUT_OF_STOCK; the proposer's attempt id;
//   - setStock, checkout steps: the request id the FSM remembers; checkout
//     stores the payment and answers taxIncluded;
//   - forceRelease: only lock:, pinlock: and burst: keys.
//
// Version 3 of placeOrder: lines carry options and a note (lines.go).
var commandVersions = map[raftfsm.CommandType]uint8{
	CmdSetStock: 2, CmdPlaceOrder: 3, CmdSetOrderStatus: 2, CmdCheckoutBegin: 2,
	CmdCheckoutCancel: 2, CmdCheckout: 2, CmdForceRelease: 2,
}

// versionOf is the version this build proposes for t.
func versionOf(t raftfsm.CommandType) uint8 {
	if v, ok := commandVersions[t]; ok {
		return v
	}
	return 1
}

// Register adds the domain commands to the node's dispatch table.
func Register(reg *raftfsm.Registry) { register(reg, versionOf) }

// register adds the commands at the versions maxVersion names (tests
// register an older build's table with it).
func register(reg *raftfsm.Registry, maxVersion func(raftfsm.CommandType) uint8) {
	add := func(t raftfsm.CommandType, name string, h raftfsm.Handler) {
		reg.RegisterVersions(t, name, maxVersion(t), h)
	}
	add(CmdUpsertMenu, "orders.upsertMenu", applyUpsertMenu)
	add(CmdSetStock, "orders.setStock", applySetStock)
	add(CmdOpenSession, "orders.openSession", applyOpenSession)
	// Each node keeps its own menu cache for pricing inside Apply.
	cat := &catalog{}
	add(CmdPlaceOrder, "orders.placeOrder", func(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
		return applyPlaceOrder(ctx, payload, cat)
	})
	add(CmdSetOrderStatus, "orders.setOrderStatus", applySetOrderStatus)
	add(CmdCheckoutBegin, "orders.checkoutBegin", applyCheckoutBegin)
	add(CmdCheckoutCancel, "orders.checkoutCancel", applyCheckoutCancel)
	add(CmdCheckout, "orders.checkout", applyCheckout)
	add(CmdPINFailure, "orders.pinFailure", applyPINFailure)
	add(CmdForceRelease, "orders.forceRelease", applyForceRelease)
	add(CmdOutboxSynced, "orders.outboxSynced", applyOutboxSynced)
	add(CmdRevokeToken, "orders.revokeToken", applyRevokeToken)
	add(CmdHousekeeping, "orders.housekeeping", applyHousekeeping)
	add(CmdCloudState, "orders.cloudState", applyCloudState)
	add(CmdRejectionSummary, "orders.rejectionSummary", applyRejectionSummary)
	add(CmdLoginFailure, "orders.loginFailure", applyLoginFailure)
	add(CmdResetPIN, "orders.resetPIN", applyResetPIN)
	registerCalls(add)
	registerPrinting(add)
	registerLines(add)
}

// Staff requests the forwarding layer may commit twice (a retry after an
// unknown outcome) carry a request id: the FSM remembers each one's first
// success for requestMemoryMs of FSM time (the forwarding layer retries
// for 5 s at most) and answers a second apply with it, changing nothing.
// Kept short: every remembered answer (a whole bill, for checkout) is in
// the snapshots until it lapses.
const requestMemoryMs = 2 * 60 * 1000

func keyRequest(id string) string { return "req:" + id }

// recalled is the remembered result of request id, if it was applied.
func recalled(ctx *raftfsm.ApplyContext, id string) ([]byte, bool) {
	if id == "" {
		return nil, false
	}
	e, live := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Get(keyRequest(id))
	return e.Value, live
}

// remember keeps a success as the answer of request id.
func remember(ctx *raftfsm.ApplyContext, id string, out []byte, err error) ([]byte, error) {
	if err != nil || id == "" {
		return out, err
	}
	if err := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Put(keyRequest(id), out, msDuration(requestMemoryMs)); err != nil {
		return nil, err
	}
	return out, nil
}

// Result is what every domain command answers: an HTTP status with either
// a success body or a reason code (the handler adds the message in the
// caller's language; Apply knows no languages).
type Result struct {
	Status       int             `json:"status"`
	Reason       string          `json:"reason,omitempty"`
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"`
	Replay       bool            `json:"replay,omitempty"`
	Body         json.RawMessage `json:"body,omitempty"`
	SKUs         []string        `json:"skus,omitempty"`
	Field        string          `json:"field,omitempty"` // the bad field of a 400, when named
}

func ok(body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return json.Marshal(Result{Status: 200, Body: b})
}

func reject(status int, reason string) ([]byte, error) {
	return json.Marshal(Result{Status: status, Reason: reason})
}

// decodePayload answers a malformed payload, or one that fails its own
// checks (validate.go), with a 400 result (never a halt: the entry is
// committed, every node answers the same).
func decodePayload(payload []byte, v any) ([]byte, bool) {
	if err := json.Unmarshal(payload, v); err != nil || !validPayload(v) {
		out, _ := reject(400, "MALFORMED_COMMAND")
		return out, false
	}
	return nil, true
}

// Key builders for the coordination KV. Session-scoped keys share a
// prefix so checkout drops them in one sweep.
func keyIdem(sessionID, requestID string) string { return "idem:" + sessionID + ":" + requestID }
func keyPayload(sessionID, fp string) string     { return "payload:" + sessionID + ":" + fp }
func keyBurst(sessionID string) string           { return "burst:" + sessionID }
func keyCooldown(clientID string) string         { return "cooldown:" + clientID }
func keySessionLock(sessionID string) string     { return "lock:session:" + sessionID }
func keyPINFail(scope, id string) string         { return "pinfail:" + scope + ":" + id }
func keyPINLock(scope, id string) string         { return "pinlock:" + scope + ":" + id }
func keyRevoked(tokenID string) string           { return "revoked:" + tokenID }
func sessionPrefixes(sessionID string) []string {
	return []string{"idem:" + sessionID + ":", "payload:" + sessionID + ":", keyBurst(sessionID)}
}

// ---- catalog and stock ----

type upsertMenuCmd struct {
	Item store.MenuItem `json:"item"`
}

func applyUpsertMenu(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c upsertMenuCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if err := store.UpsertMenuItem(ctx.DB, c.Item); err != nil {
		return nil, err
	}
	// Every version writes it: a v1 write after a v2 one must change the
	// cache key too, or nodes would price with different menus.
	if err := store.SetCatalogVersion(ctx.DB, int64(ctx.Index)); err != nil {
		return nil, err
	}
	if err := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Put(keyCatalogVersion, []byte(fmt.Sprint(ctx.Index)), 0); err != nil {
		return nil, err
	}
	item, _, err := store.GetMenuItem(ctx.DB, c.Item.MenuID)
	if err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	return ok(item)
}

type setStockCmd struct {
	SKU      string `json:"sku"`
	Quantity *int64 `json:"quantity"`
	// RequestID names the staff request; the FSM remembers it, so the
	// command applied twice (a forward retried after an unknown outcome)
	// changes stock once.
	RequestID string `json:"requestId,omitempty"`
}

func applySetStock(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c setStockCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if out, done := recalled(ctx, c.RequestID); done {
		return out, nil
	}
	exists, err := store.SKUExists(ctx.DB, c.SKU)
	if err != nil {
		return nil, err
	}
	if !exists {
		return reject(404, "SKU_NOT_FOUND")
	}
	if err := store.SetStock(ctx.DB, c.SKU, c.Quantity); err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	out, err := ok(store.StockLevel{SKU: c.SKU, Quantity: c.Quantity})
	return remember(ctx, c.RequestID, out, err)
}

// ---- sessions ----

type openSessionCmd struct {
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
	PIN       string `json:"pin"`
}

type sessionOpened struct {
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
	PIN       string `json:"pin"`
	Status    string `json:"status"`
}

func applyOpenSession(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c openSessionCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if _, exists, err := store.GetSession(ctx.DB, c.SessionID); err != nil {
		return nil, err
	} else if exists {
		// 128 random bits collide only when a command is replayed.
		return reject(409, "SESSION_EXISTS")
	}
	if err := store.InsertSession(ctx.DB, c.SessionID, c.TableID, c.PIN, ctx.WallTime); err != nil {
		return nil, err
	}
	return ok(sessionOpened{SessionID: c.SessionID, TableID: c.TableID, PIN: c.PIN, Status: store.SessionActive})
}

// ---- locks, PINs, tokens ----

type forceReleaseCmd struct {
	Key  string `json:"key"`
	Node string `json:"node"`
}

func applyForceRelease(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c forceReleaseCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if ctx.Version >= 2 && !releasableKey(c.Key) {
		return reject(400, "INVALID_KEY")
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	e, live := t.Get(c.Key)
	if !live {
		return reject(404, "LOCK_NOT_FOUND")
	}
	if _, err := t.Delete(c.Key); err != nil {
		return nil, err
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
	for _, p := range []string{"lock:", "pinlock:", "burst:"} {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	return false
}

func sessionOfLock(key string) string {
	const p = "lock:session:"
	if len(key) > len(p) && key[:len(p)] == p {
		return key[len(p):]
	}
	return ""
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

func applyPINFailure(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c pinFailureCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	locked := false
	for _, scope := range pinScopes(c.Client, c.Addr, c.SessionID) {
		count, err := bumpCounter(t, keyPINFail(scope.name, scope.id), pinWindowMs)
		if err != nil {
			return nil, err
		}
		if count >= scope.limit {
			if err := t.Put(keyPINLock(scope.name, scope.id), nil, msDuration(pinLockDurationMs)); err != nil {
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
func bumpCounter(t *kv.Tx, key string, windowMs int64) (int, error) {
	count, ttl := 0, windowMs
	if e, live := t.Get(key); live {
		fmt.Sscan(string(e.Value), &count)
		ttl = e.ExpiresAt - t.Now()
	}
	count++
	return count, t.Put(key, []byte(fmt.Sprint(count)), msDuration(ttl))
}

type revokeTokenCmd struct {
	TokenID string `json:"tokenId"`
	TTLms   int64  `json:"ttlMs"`
}

func applyRevokeToken(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c revokeTokenCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if c.TTLms <= 0 {
		c.TTLms = 1
	}
	if err := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Put(keyRevoked(c.TokenID), nil, msDuration(c.TTLms)); err != nil {
		return nil, err
	}
	return ok(map[string]bool{"revoked": true})
}

// ---- cloud sync ----

type outboxSyncedCmd struct {
	Seqs     []int64 `json:"seqs"`
	SyncedAt int64   `json:"syncedAt"` // leader's wall clock, for display
}

func applyOutboxSynced(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c outboxSyncedCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if err := store.DeleteOutbox(ctx.DB, c.Seqs); err != nil {
		return nil, err
	}
	if c.SyncedAt > 0 {
		if err := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Put(keyCloudLastSync, []byte(fmt.Sprint(c.SyncedAt)), 0); err != nil {
			return nil, err
		}
	}
	return ok(map[string]int{"synced": len(c.Seqs)})
}
