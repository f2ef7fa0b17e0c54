package orders

import (
	"errors"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

var errOrderIDsExhausted = errors.New("no free order id")

var statusRank = map[string]int{store.StatusAccepted: 0, store.StatusCooking: 1, store.StatusReady: 2, store.StatusServed: 3}

// validTransition: forward (steps may be skipped), one step back for a
// kitchen recall, or CANCELLED before SERVED.
func validTransition(from, to string) bool {
	if to == store.StatusCancelled {
		return from != store.StatusServed && from != store.StatusCancelled
	}
	f, okFrom := statusRank[from]
	t, okTo := statusRank[to]
	if !okFrom || !okTo {
		return false
	}
	return t > f || t == f-1
}

type setOrderStatusCmd struct {
	OrderID int64  `json:"orderId"`
	Status  string `json:"status"`
	Node    string `json:"node"`
}

func applySetOrderStatus(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c setOrderStatusCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	o, found, err := store.GetOrder(ctx.DB, c.OrderID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(404, "ORDER_NOT_FOUND")
	}
	if ctx.Version >= 2 {
		// A paid bill stays as paid: after checkout no bump or cancel
		// changes an order, its stock or the cloud (checkout already
		// queued the delete of its document).
		sess, found, err := store.GetSession(ctx.DB, o.SessionID)
		if err != nil {
			return nil, err
		}
		if !found || sess.Status != store.SessionActive {
			return reject(410, "SESSION_CLOSED")
		}
	}
	if !validTransition(o.Status, c.Status) {
		return reject(409, "INVALID_TRANSITION")
	}
	if c.Status == store.StatusCancelled {
		// Cancelling puts the order's stock back (tracked skus only).
		for _, it := range o.Items {
			if err := store.AddStock(ctx.DB, it.MenuID, int64(it.Quantity)); err != nil {
				return nil, err
			}
			for _, t := range it.Toppings {
				if err := store.AddStock(ctx.DB, t.ToppingID, int64(it.Quantity)); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := clearBumpsOnRecall(ctx, &o, c.Status); err != nil {
		return nil, err
	}
	if err := store.SetOrderStatus(ctx.DB, c.OrderID, c.Status, ctx.WallTime); err != nil {
		return nil, err
	}
	if err := store.InsertOutbox(ctx.DB, c.OrderID, store.OutboxUpsert); err != nil {
		return nil, err
	}
	o.Status, o.UpdatedAt = c.Status, store.FormatTime(ctx.WallTime)
	emitOrder(ctx, "order.updated", o)
	return ok(o)
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
		out, err := reject(404, "SESSION_NOT_FOUND")
		return s, out, err
	}
	if s.Status != store.SessionActive {
		out, err := reject(410, "SESSION_CLOSED")
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
func applyCheckoutBegin(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c checkoutCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if out, done := recalled(ctx, c.RequestID); done {
		return out, nil
	}
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	if ctx.Version >= 2 && c.LockTTLms <= 0 {
		c.LockTTLms = defaultCheckoutLockMs // a lock with no TTL would never lapse
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	if !t.Has(keySessionLock(c.SessionID)) {
		if err := t.Put(keySessionLock(c.SessionID), []byte("checkout"), msDuration(c.LockTTLms)); err != nil {
			return nil, err
		}
	}
	e, _ := t.Get(keySessionLock(c.SessionID))
	st, err := bill(ctx, s, c.TaxRatePercent)
	if err != nil {
		return nil, err
	}
	st.Locked, st.ExpiresAt = true, &e.ExpiresAt
	out, err = ok(st)
	return remember(ctx, c.RequestID, out, err)
}

func applyCheckoutCancel(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c checkoutCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if out, done := recalled(ctx, c.RequestID); done {
		return out, nil
	}
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	if _, err := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index).Delete(keySessionLock(c.SessionID)); err != nil {
		return nil, err
	}
	st, err := bill(ctx, s, c.TaxRatePercent)
	if err != nil {
		return nil, err
	}
	out, err = ok(st)
	return remember(ctx, c.RequestID, out, err)
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
func applyCheckout(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c checkoutCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if out, done := recalled(ctx, c.RequestID); done {
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
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	for _, p := range sessionPrefixes(c.SessionID) {
		if _, err := t.DeletePrefix(p); err != nil {
			return nil, err
		}
	}
	if _, err := t.Delete(keySessionLock(c.SessionID)); err != nil {
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
	return remember(ctx, c.RequestID, out, err)
}

// ---- housekeeping ----

type housekeepingCmd struct {
	// AuditKeepMs and ArchiveKeepMs are the retentions, judged inside
	// Apply on FSM time: no box's wall clock decides what is deleted.
	AuditKeepMs   int64 `json:"auditKeepMs,omitempty"`
	ArchiveKeepMs int64 `json:"archiveKeepMs,omitempty"`
	// The *BeforeWall cutoffs (the proposer's wall clock) come from
	// builds before that; still honoured so an old log replays alike.
	ArchiveBeforeWall int64 `json:"archiveBeforeWall,omitempty"`
	AuditBeforeWall   int64 `json:"auditBeforeWall,omitempty"`
	Limit             int   `json:"limit"`
}

// keptSince is the FSM-time cutoff of a retention (0: keep everything).
func keptSince(now, keepMs int64) int64 {
	if keepMs <= 0 || now <= keepMs {
		return 0
	}
	return now - keepMs
}

// applyHousekeeping moves closed sessions' orders into the archive and
// prunes old audit rows, in bounded steps, so a box that runs for years
// keeps a bounded live database.
func applyHousekeeping(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c housekeepingCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if c.Limit <= 0 || c.Limit > 10000 {
		c.Limit = 1000
	}
	if err := store.StampRetention(ctx.DB, ctx.Now); err != nil {
		return nil, err
	}
	n, err := store.ArchiveClosed(ctx.DB, ctx.WallTime, ctx.Now, c.Limit)
	if err != nil {
		return nil, err
	}
	pruned, err := store.PruneAudit(ctx.DB, keptSince(ctx.Now, c.AuditKeepMs), c.Limit, store.RetainFSM)
	if err != nil {
		return nil, err
	}
	archPruned, err := store.PruneArchive(ctx.DB, keptSince(ctx.Now, c.ArchiveKeepMs), c.Limit, store.RetainFSM)
	if err != nil {
		return nil, err
	}
	if c.AuditBeforeWall > 0 || c.ArchiveBeforeWall > 0 {
		p, err := store.PruneAudit(ctx.DB, c.AuditBeforeWall, c.Limit, store.RetainWall)
		if err != nil {
			return nil, err
		}
		a, err := store.PruneArchive(ctx.DB, c.ArchiveBeforeWall, c.Limit, store.RetainWall)
		if err != nil {
			return nil, err
		}
		pruned, archPruned = pruned+p, archPruned+a
	}
	return ok(map[string]int64{"archived": n, "auditPruned": pruned, "archivePruned": archPruned})
}
