package orders

import (
	"net/http"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Table sessions: opening one, and the checkout that closes it.

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

func applyOpenSession(ctx *raftfsm.ApplyContext, tx *kv.Tx, c openSessionCmd) ([]byte, error) {
	if _, exists, err := store.GetSession(ctx.DB, c.SessionID); err != nil {
		return nil, err
	} else if exists {
		// 128 random bits collide only when a command is replayed.
		return reject(http.StatusConflict, "SESSION_EXISTS")
	}
	if err := store.InsertSession(ctx.DB, c.SessionID, c.TableID, c.PIN, ctx.WallTime); err != nil {
		return nil, err
	}
	return ok(sessionOpened{SessionID: c.SessionID, TableID: c.TableID, PIN: c.PIN, Status: store.SessionActive})
}

// ---- checkout ----

type checkoutCmd struct {
	SessionID string `json:"sessionId"`
	LockTTLms int64  `json:"lockTtlMs,omitempty"`
	Node      string `json:"node"`
	// RequestID: as in setStockCmd, a begin or cancel applied twice acts
	// once (a retried begin must not re-lock after a cancel).
	RequestID string `json:"requestId,omitempty"`
	Payment   string `json:"payment,omitempty"` // checkout only
	// TaxRatePercent is the proposer's [shop] tax_rate_percent (nil: 10).
	TaxRatePercent *int64 `json:"taxRatePercent,omitempty"`
}

// taxIncluded is the consumption tax inside a tax-inclusive total,
// rounded down (API.md).
func taxIncluded(total int64, rate *int64) int64 {
	r := int64(10)
	if rate != nil {
		r = *rate
	}
	return total * r / (100 + r)
}

type checkoutState struct {
	SessionID string        `json:"sessionId"`
	TableID   string        `json:"tableId"`
	Locked    bool          `json:"locked"`
	ExpiresAt *int64        `json:"lockExpiresAt,omitempty"`
	Total     int64         `json:"total"`
	Tax       int64         `json:"taxIncluded"`
	Orders    []store.Order `json:"orders"`
}

// activeSession loads a session for a checkout step.
func activeSession(ctx *raftfsm.ApplyContext, id string) (store.Session, []byte, error) {
	s, found, err := store.GetSession(ctx.DB, id)
	if err != nil {
		return s, nil, err
	}
	if !found {
		out, err := reject(http.StatusNotFound, "SESSION_NOT_FOUND")
		return s, out, err
	}
	if s.Status != store.SessionActive {
		out, err := reject(http.StatusGone, "SESSION_CLOSED")
		return s, out, err
	}
	return s, nil, nil
}

func bill(ctx *raftfsm.ApplyContext, s store.Session, rate *int64) (checkoutState, error) {
	orders, err := store.SessionOrdersOldestFirst(ctx.DB, s.SessionID)
	if err != nil {
		return checkoutState{}, err
	}
	st := checkoutState{SessionID: s.SessionID, TableID: s.TableID, Orders: orders}
	for _, o := range orders {
		if o.Status != store.StatusCancelled {
			st.Total += o.TotalPrice
		}
	}
	st.Tax = taxIncluded(st.Total, rate)
	return st, nil
}

// defaultCheckoutLockMs is [admission] checkout_lock_ttl's default.
const defaultCheckoutLockMs = 15 * 60 * 1000

// applyCheckoutBegin takes lock:session:{id}; beginning again while held
// answers the same bill (a staff double tap is not an error).
func applyCheckoutBegin(ctx *raftfsm.ApplyContext, tx *kv.Tx, c checkoutCmd) ([]byte, error) {
	if out, done := recalled(tx, c.RequestID); done {
		return out, nil
	}
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	if ctx.Version >= 2 && c.LockTTLms <= 0 {
		c.LockTTLms = defaultCheckoutLockMs // a lock with no TTL would never lapse
	}
	if !tx.Has(keySessionLock(c.SessionID)) {
		if err := tx.Put(keySessionLock(c.SessionID), []byte("checkout"), msDuration(c.LockTTLms)); err != nil {
			return nil, err
		}
	}
	e, _ := tx.Get(keySessionLock(c.SessionID))
	st, err := bill(ctx, s, c.TaxRatePercent)
	if err != nil {
		return nil, err
	}
	st.Locked, st.ExpiresAt = true, &e.ExpiresAt
	out, err = ok(st)
	return remember(tx, c.RequestID, out, err)
}

func applyCheckoutCancel(ctx *raftfsm.ApplyContext, tx *kv.Tx, c checkoutCmd) ([]byte, error) {
	if out, done := recalled(tx, c.RequestID); done {
		return out, nil
	}
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	if _, err := tx.Delete(keySessionLock(c.SessionID)); err != nil {
		return nil, err
	}
	st, err := bill(ctx, s, c.TaxRatePercent)
	if err != nil {
		return nil, err
	}
	out, err = ok(st)
	return remember(tx, c.RequestID, out, err)
}

type checkoutDone struct {
	SessionID string        `json:"sessionId"`
	Total     int64         `json:"total"`
	Tax       int64         `json:"taxIncluded"`
	Payment   *string       `json:"payment"`
	Orders    []store.Order `json:"orders"`
}

// applyCheckout closes the session, drops its keys and cached results, and
// takes its orders out of the cloud's active collection.
func applyCheckout(ctx *raftfsm.ApplyContext, tx *kv.Tx, c checkoutCmd) ([]byte, error) {
	if out, done := recalled(tx, c.RequestID); done {
		return out, nil
	}
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	st, err := bill(ctx, s, c.TaxRatePercent)
	if err != nil {
		return nil, err
	}
	if err := store.CloseSession(ctx.DB, c.SessionID, ctx.WallTime, c.Payment); err != nil {
		return nil, err
	}
	if err := closeSessionCalls(ctx, c.SessionID); err != nil {
		return nil, err
	}
	for _, p := range sessionPrefixes(c.SessionID) {
		if _, err := tx.DeletePrefix(p); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Delete(keySessionLock(c.SessionID)); err != nil {
		return nil, err
	}
	for _, o := range st.Orders {
		if err := store.InsertOutbox(ctx.DB, o.OrderID, store.OutboxDelete); err != nil {
			return nil, err
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, SessionID: c.SessionID, ReasonCode: "CHECKED_OUT", Node: c.Node}); err != nil {
		return nil, err
	}
	if err := queueReceipts(ctx, st, c.Payment); err != nil {
		return nil, err
	}
	ctx.Emit("session.closed", mustJSON(map[string]string{"type": "session.closed", "sessionId": s.SessionID, "tableId": s.TableID}))
	done := checkoutDone{SessionID: s.SessionID, Total: st.Total, Tax: st.Tax, Orders: st.Orders}
	if c.Payment != "" {
		done.Payment = &c.Payment
	}
	out, err = ok(done)
	return remember(tx, c.RequestID, out, err)
}
