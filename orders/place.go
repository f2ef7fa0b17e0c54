package orders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/printing/escpos"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Windows are the admission windows, carried in each command so every
// node judges with the proposer's settings (configs may differ mid-upgrade).
type Windows struct {
	CooldownMs    int64 `json:"cooldownMs"`
	BurstMs       int64 `json:"burstMs"`
	PayloadMs     int64 `json:"payloadMs"`
	IdempotencyMs int64 `json:"idempotencyMs"`
}

// placeOrderCmd is a whole order: everything variable was chosen by the
// proposer (the candidate id, the windows); Apply decides.
type placeOrderCmd struct {
	SessionID     string           `json:"sessionId"`
	RequestID     string           `json:"requestId,omitempty"` // Idempotency-Key, lower-cased
	ClientID      string           `json:"clientId,omitempty"`
	Source        string           `json:"source"` // "guest" or "staff"
	Node          string           `json:"node"`
	Items         []admission.Line `json:"items"` // normalized
	Fingerprint   string           `json:"fingerprint"`
	ExpectedTotal *int64           `json:"expectedTotal,omitempty"`
	AllowRepeat   bool             `json:"allowRepeat,omitempty"`
	CandidateID   int64            `json:"candidateId"`
	Windows       Windows          `json:"windows"`
	// Attempt is random per HTTP request and kept in the cached result: the
	// same attempt found again is the forwarding layer re-proposing this
	// very request, whose answer is the first one, not a replay.
	Attempt string `json:"attempt,omitempty"`
}

// successBody is the 200 answer of a placed (or replayed) order.
type successBody struct {
	RequestID        *string `json:"requestId"`
	Allowed          bool    `json:"allowed"`
	OrderID          int64   `json:"orderId"`
	Status           string  `json:"status"`
	TotalPrice       int64   `json:"totalPrice"`
	IdempotentReplay bool    `json:"idempotentReplay"`
	// TicketNo is the number the guest is called by (0 in results cached
	// before ticket numbers).
	TicketNo int64 `json:"ticketNo,omitempty"`
}

// cachedResult is what the KV keeps for a key and for a payload window
// (encodeCached, placecodec.go).
type cachedResult struct {
	Fingerprint string      `json:"fp"`
	Body        successBody `json:"body"`
	// Attempt is the admitting command's attempt id (empty for a payload
	// replay's entry: its first answer was already a replay).
	Attempt string `json:"attempt,omitempty"`
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// placeRowReplayVersion is the first placeOrder version whose order keeps
// what a resend replays in its own row (store/replay.go) instead of two KV
// keys, the key's cached result and the cart's payload window.
const placeRowReplayVersion = 5

// placeOrderWith is the placeOrder handler pricing with cat, this node's
// menu cache, and judging with st, its admission state (admitstate.go).
func placeOrderWith(cat *catalog, st *admitState) applyFunc[placeOrderCmd] {
	return func(ctx *raftfsm.ApplyContext, tx *kv.Tx, c placeOrderCmd) ([]byte, error) {
		if err := st.ready(ctx, tx); err != nil {
			return nil, fmt.Errorf("build the admission state: %w", err)
		}
		return applyPlaceOrder(&placement{ctx: ctx, tx: tx, st: st, c: c, audit: store.Audit{At: ctx.WallTime,
			RequestID: c.RequestID, ClientID: c.ClientID, SessionID: c.SessionID, Node: c.Node}}, cat)
	}
}

// applyPlaceOrder runs the whole admission gate and saves the order, in the
// decision rows of API.md (rows 1–4 were judged by the HTTP handler; the
// session is judged again here). Each step answers the order or passes it
// on; rejections write only their audit row.
func applyPlaceOrder(p *placement, cat *catalog) ([]byte, error) {
	for _, step := range []func() ([]byte, error){p.checkSession, p.replayKnownKey, p.checkWindows} {
		if out, err := step(); out != nil || err != nil {
			return out, err
		}
	}
	cart, out, err := p.priceAndReserve(cat)
	if out != nil || err != nil {
		return out, err
	}
	return p.admit(cart)
}

// placement is one placeOrder command going through the gate.
type placement struct {
	ctx   *raftfsm.ApplyContext
	tx    *kv.Tx
	st    *admitState // what the gate reads, in memory; writes go through it
	c     placeOrderCmd
	audit store.Audit // the row every outcome writes
	table string      // the session's table, set by checkSession
	menuV int64       // the catalog version, read by checkSession
	// replays is what the session's rows replay it by (rowReplays), read
	// once: nothing between rows 5 and 11 writes an order.
	replays *store.Replays
}

func (p *placement) guest() bool { return p.c.Source == "guest" }

// rejected writes the audit row of a rejection and answers it.
func (p *placement) rejected(status int, reason string, retryAfterMs int64, skus []string) ([]byte, error) {
	p.audit.ReasonCode = reason
	if err := store.InsertAudit(p.ctx.DB, p.audit); err != nil {
		return nil, err
	}
	return json.Marshal(Result{Status: status, Reason: reason, RetryAfterMs: retryAfterMs, SKUs: skus})
}

// answer is a success: a staff order's is the whole order object, read
// here at this index, so the handler never reads after the commit.
func (p *placement) answer(body successBody, replay bool) ([]byte, error) {
	if p.c.Source == "staff" {
		b, err := staffBody(p.ctx, body)
		if err != nil {
			return nil, err
		}
		return json.Marshal(Result{Status: http.StatusOK, Replay: replay, Body: b})
	}
	return appendGuestAnswer(nil, body, replay), nil
}

// appendGuestAnswer appends what json.Marshal writes for a guest's
// Result{Status: 200, Replay: replay, Body: json.Marshal(body)}, byte for
// byte, without reflection or the RawMessage's second scan: every box
// builds it for every order, and decodeResult reads it back the same way.
// A request id that needs escaping (never one ParseIdempotencyKey passed)
// goes through encoding/json.
func appendGuestAnswer(b []byte, body successBody, replay bool) []byte {
	if body.RequestID != nil && !plainJSONString(*body.RequestID) || !plainJSONString(body.Status) {
		inner, _ := json.Marshal(body) // plain fields: cannot fail
		out, _ := json.Marshal(Result{Status: http.StatusOK, Replay: replay, Body: inner})
		return append(b, out...)
	}
	b = append(b, `{"status":200,`...)
	if replay {
		b = append(b, `"replay":true,`...)
	}
	b = append(b, `"body":{"requestId":`...)
	if body.RequestID == nil {
		b = append(b, "null"...)
	} else {
		b = append(append(append(b, '"'), *body.RequestID...), '"')
	}
	b = append(b, `,"allowed":`...)
	b = strconv.AppendBool(b, body.Allowed)
	b = append(b, `,"orderId":`...)
	b = strconv.AppendInt(b, body.OrderID, 10)
	b = append(append(append(b, `,"status":"`...), body.Status...), '"')
	b = append(b, `,"totalPrice":`...)
	b = strconv.AppendInt(b, body.TotalPrice, 10)
	b = append(b, `,"idempotentReplay":`...)
	b = strconv.AppendBool(b, body.IdempotentReplay)
	if body.TicketNo != 0 {
		b = append(b, `,"ticketNo":`...)
		b = strconv.AppendInt(b, body.TicketNo, 10)
	}
	return append(b, "}}"...)
}

// plainJSONString: s is written by encoding/json as itself in quotes
// (printable ASCII, nothing it escapes).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// replayed answers a cached result again (rows 5 and 11).
func (p *placement) replayed(r cachedResult, reason string) ([]byte, error) {
	body := r.Body
	p.audit.ReasonCode, p.audit.IdempotentReplay, p.audit.OrderID = reason, true, body.OrderID
	if err := store.InsertAudit(p.ctx.DB, p.audit); err != nil {
		return nil, err
	}
	// The same attempt is this very request committed again by the
	// forwarding layer: the guest's first answer, not a replay.
	own := p.c.Attempt != "" && r.Attempt == p.c.Attempt
	body.IdempotentReplay = !own
	return p.answer(body, !own)
}

// checkSession is row 3 again, inside Apply: checkout may have closed the
// session since the node looked.
func (p *placement) checkSession() ([]byte, error) {
	if a := p.st.sessions[p.c.SessionID]; a != nil {
		p.table, p.menuV = a.table, p.st.catalogV
		return nil, nil
	}
	// Not active: only the answer (unknown or closed) is read from the
	// files, a rejection's path.
	table, status, menuV, exists, err := store.SessionTable(p.ctx.DB, p.c.SessionID)
	if err != nil {
		return nil, err
	}
	if exists && status == store.SessionActive {
		// The memory missed it: it is out of step, build it again.
		if err := p.st.rebuild(p.ctx, p.tx); err != nil {
			return nil, err
		}
	}
	if !exists {
		return p.rejected(http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
	}
	if status != store.SessionActive {
		return p.rejected(http.StatusGone, "SESSION_CLOSED", 0, nil)
	}
	p.table, p.menuV = table, menuV
	return nil, nil
}

// replayKnownKey is rows 5–6: a known key replays its result, before any
// window can turn a retry into a 429 or 409. Row 7 (same key still in
// progress) cannot arise: admission and save are one Apply, so there is no
// "in progress" state to collide with.
func (p *placement) replayKnownKey() ([]byte, error) {
	c := p.c
	if c.RequestID == "" {
		return nil, nil
	}
	if e, live := p.st.window(keyIdem(c.SessionID, c.RequestID), p.ctx.Now); live {
		if r, good := decodeCached(e.Value); good {
			return p.replayKey(r)
		}
	}
	// An order of version 5 or later keeps its key in its row.
	rows, err := p.rowReplays()
	if err != nil || !rows.KeyFound {
		return nil, err
	}
	return p.replayKey(rowCached(rows.Key))
}

// rowReplays is what the session's order rows replay this command by, by
// its key and by its cart: one lookup serves rows 5 and 11.
func (p *placement) rowReplays() (store.Replays, error) {
	if p.replays == nil {
		fp := ""
		if p.guest() && !p.c.AllowRepeat {
			fp = p.c.Fingerprint // only a guest's cart has a window (row 11)
		}
		r := p.st.replays(p.c.SessionID, p.c.RequestID, fp, p.ctx.Now)
		p.replays = &r
	}
	return *p.replays, nil
}

// replayKey answers a resend of a known key: its result, unless the key
// came back with another cart.
func (p *placement) replayKey(r cachedResult) ([]byte, error) {
	if r.Fingerprint != p.c.Fingerprint {
		return p.rejected(http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", 0, nil)
	}
	return p.replayed(r, "IDEMPOTENT_REPLAY")
}

// rowCached is the result an order's row replays (store.FindReplays):
// what admit would have cached for it.
func rowCached(r store.Replayed) cachedResult {
	return cachedResult{Fingerprint: r.Fingerprint, Attempt: r.Attempt, Body: successBody{RequestID: r.RequestID, Allowed: true,
		OrderID: r.OrderID, Status: store.StatusAccepted, TotalPrice: r.TotalPrice, TicketNo: r.TicketNo}}
}

// checkWindows is rows 8–11: cooldown, session lock, burst and the same
// cart again (the guest's windows; staff meet only the session lock).
func (p *placement) checkWindows() ([]byte, error) {
	c, st, now := p.c, p.st, p.ctx.Now
	guest := p.guest()
	if guest {
		// Row 8: the client's cooldown after its last success.
		if end, live := st.cooldown(c.ClientID, now); live {
			return p.rejected(http.StatusTooManyRequests, "COOLDOWN_ACTIVE", end-now, nil)
		}
	}
	// Row 9: checkout holds the session lock.
	if e, live := st.window(keySessionLock(c.SessionID), now); live {
		wait := e.ExpiresAt - now
		if wait > 5000 {
			wait = 5000
		}
		return p.rejected(http.StatusConflict, "SESSION_BUSY", wait, nil)
	}
	if !guest {
		return nil, nil
	}
	// Row 10: one order per session per burst window.
	if end, live := st.burst(c.SessionID, now); live {
		return p.rejected(http.StatusConflict, "SESSION_ORDER_IN_PROGRESS", end-now, nil)
	}
	// Row 11: the same cart again within the window is the same order,
	// unless the guest confirmed a repeat.
	if c.AllowRepeat {
		return nil, nil
	}
	if e, live := st.window(keyPayload(c.SessionID, c.Fingerprint), now); live {
		r, good := decodeCached(e.Value)
		if !good {
			return p.rejected(http.StatusConflict, "DUPLICATE_PAYLOAD", e.ExpiresAt-now, nil)
		}
		return p.replayCart(r)
	}
	// An order of version 5 or later keeps its cart's window in its row.
	rows, err := p.rowReplays()
	if err != nil || !rows.CartFound {
		return nil, err
	}
	return p.replayCart(rowCached(rows.Cart))
}

// replayCart answers the same cart under a new key with the order it
// already made (row 11).
func (p *placement) replayCart(r cachedResult) ([]byte, error) {
	c := p.c
	// Remember the new key too: a resend of it after the window must
	// still replay, never become a second order. No order's row holds
	// this key, so it is a KV key in every version.
	if c.RequestID != "" {
		if err := p.st.put(p.tx, keyIdem(c.SessionID, c.RequestID), encodeCached(cachedResult{Fingerprint: c.Fingerprint, Body: r.Body}, p.ctx.Version), msDuration(c.Windows.IdempotencyMs)); err != nil {
			return nil, err
		}
	}
	return p.replayed(r, "PAYLOAD_REPLAY")
}

// pricedCart is an order's lines as priced at this index.
type pricedCart struct {
	items []store.OrderItem
	total int64
	lines bool // stations, options and a ticket number (version 3)
}

// priceAndReserve is rows 12–13: price and stock, judged on this node's
// replica of the catalog, which is the same on every node at this index;
// an order that passes has its stock taken.
func (p *placement) priceAndReserve(cat *catalog) (pricedCart, []byte, error) {
	ctx, c := p.ctx, p.c
	fail := func(status int, reason string, skus []string) (pricedCart, []byte, error) {
		out, err := p.rejected(status, reason, 0, skus)
		return pricedCart{}, out, err
	}
	menu, err := cat.lookup(p.menuV, ctx.DB)
	if err != nil {
		return pricedCart{}, nil, err
	}
	// Version 3 brought order lines (lines.go): an older command is
	// applied as its build did, with no options, station or ticket
	// number, the same on a box that applied it before upgrading.
	lines := ctx.Version >= 3
	if field := cartOptionsField(menu, c.Items); field != "" && lines {
		out, err := withField(p.rejected(http.StatusBadRequest, "INVALID_ORDER", 0, nil))(field)
		return pricedCart{}, out, err
	}
	items, total, known, unavailable := priceCart(menu, c.Items, lines)
	if !known {
		return fail(http.StatusBadRequest, "INVALID_ORDER", nil)
	}
	if ctx.Version < 2 && len(unavailable) > 0 {
		// Version 1 judged an unavailable item before row 12.
		return fail(http.StatusConflict, "OUT_OF_STOCK", unavailable)
	}
	if c.ExpectedTotal != nil && *c.ExpectedTotal != total {
		return fail(http.StatusBadRequest, "PRICE_MISMATCH", nil)
	}
	if len(unavailable) > 0 {
		return fail(http.StatusConflict, "OUT_OF_STOCK", unavailable)
	}
	// Take the stock, all or nothing, judged on the levels in memory.
	need := unitsPerSKU(c.Items)
	if short := p.st.short(need); len(short) > 0 {
		return fail(http.StatusConflict, "OUT_OF_STOCK", short)
	}
	if err := p.st.takeStock(ctx, need); err != nil {
		return pricedCart{}, nil, err
	}
	return pricedCart{items: items, total: total, lines: lines}, nil, nil
}

// admit saves an order that passed every row: save it under a free id,
// cache the answer, start the windows, queue its tickets.
func (p *placement) admit(cart pricedCart) ([]byte, error) {
	ctx, tx, c, st := p.ctx, p.tx, p.c, p.st
	var reqID *string
	if c.RequestID != "" {
		r := c.RequestID
		reqID = &r
	}
	var ticketNo int64
	var err error
	if cart.lines {
		// store.NextTicketNo from memory: the same number, the same row.
		var next store.TicketCounter
		ticketNo, next = st.ticket.Next()
		if err := store.WriteTicketCounter(ctx.DB, st.ticket, next); err != nil {
			return nil, err
		}
		st.ticket = next
	}
	order := store.Order{Seq: int64(ctx.Index), SessionID: c.SessionID, TableID: p.table,
		Status: store.StatusAccepted, Items: cart.items, TotalPrice: cart.total, RequestID: reqID, Source: c.Source, ClientID: c.ClientID,
		TicketNo: ticketNo, Bumped: []string{}}
	// Version 5 keeps the key's result and the cart's window in the row;
	// older versions wrote them as KV keys, and are applied as they were.
	inRow := ctx.Version >= placeRowReplayVersion
	var replay store.OrderReplay
	if inRow {
		replay = p.orderReplay()
	}
	orderID, err := insertOrder(ctx, st, order, c.CandidateID, replay)
	if err != nil {
		return nil, err
	}
	if inRow {
		st.addReplay(c.SessionID, store.Replayed{OrderID: orderID, RequestID: reqID, TotalPrice: cart.total, TicketNo: ticketNo,
			Fingerprint: replay.Fingerprint, Attempt: replay.Attempt}, order.Seq, replay.KeyUntil, replay.CartUntil)
	}
	order.OrderID = orderID
	body := successBody{RequestID: reqID, Allowed: true, OrderID: orderID, Status: store.StatusAccepted, TotalPrice: cart.total, TicketNo: ticketNo}
	var cached []byte
	if !inRow {
		cached = encodeCached(cachedResult{Fingerprint: c.Fingerprint, Body: body, Attempt: c.Attempt}, ctx.Version)
		if c.RequestID != "" {
			if err := st.put(tx, keyIdem(c.SessionID, c.RequestID), cached, msDuration(c.Windows.IdempotencyMs)); err != nil {
				return nil, err
			}
		}
	}
	if p.guest() {
		if err := p.startWindows(cached); err != nil {
			return nil, err
		}
	}
	p.audit.ReasonCode, p.audit.OrderID = "ADMITTED", orderID
	if err := store.InsertAudit(ctx.DB, p.audit); err != nil {
		return nil, err
	}
	if err := store.InsertOutbox(ctx.DB, orderID, store.OutboxUpsert); err != nil {
		return nil, err
	}
	order.CreatedAt, order.UpdatedAt = store.FormatTime(ctx.WallTime), store.FormatTime(ctx.WallTime)
	// The kitchen tickets go in the same Apply: no order without its jobs.
	if _, err := queueTicketsTo(ctx, st.printers, order, escpos.KindTicket); err != nil {
		return nil, err
	}
	emitOrder(ctx, "order.created", order)
	return p.answer(body, false)
}

// orderReplay is what an admitted order's row is replayed by (version 5):
// until when its key and its cart answer with it, judged as the KV judged
// the keys it replaces (kvUntil).
func (p *placement) orderReplay() store.OrderReplay {
	c, now := p.c, p.ctx.Now
	r := store.OrderReplay{Fingerprint: c.Fingerprint, Attempt: c.Attempt}
	if c.RequestID != "" {
		r.KeyUntil = kvUntil(now, c.Windows.IdempotencyMs)
	}
	if p.guest() && c.Windows.PayloadMs > 0 {
		r.CartUntil = kvUntil(now, c.Windows.PayloadMs)
	}
	return r
}

// kvUntil is when a key put at now with a TTL of ms lapses, as kv.Tx.Put
// decides it: a TTL that is not positive as a duration never lapses.
func kvUntil(now, ms int64) int64 {
	ttl := msDuration(ms)
	if ttl <= 0 {
		return store.Forever
	}
	return now + ttl.Milliseconds()
}

// startWindows opens a guest's cooldown and burst window after a success
// (rows 8 and 10 of the next order) and, with the cached result of an
// older version, the cart's window as a KV key (row 11; version 5 keeps
// it in the order's row and caches nothing). Version 6 writes the
// cooldown and the burst window as one record named by the order's index
// (windowrecords.go).
func (p *placement) startWindows(cached []byte) error {
	c, tx, st := p.c, p.tx, p.st
	if cached != nil && c.Windows.PayloadMs > 0 {
		if err := st.put(tx, keyPayload(c.SessionID, c.Fingerprint), cached, msDuration(c.Windows.PayloadMs)); err != nil {
			return err
		}
	}
	if p.ctx.Version >= placeWindowRecordVersion {
		if c.Windows.CooldownMs <= 0 && c.Windows.BurstMs <= 0 {
			return nil
		}
		return st.startWindowRecord(p.ctx, tx, c.ClientID, c.Windows.CooldownMs, c.SessionID, c.Windows.BurstMs)
	}
	if c.Windows.CooldownMs > 0 {
		if err := st.put(tx, keyCooldown(c.ClientID), nil, msDuration(c.Windows.CooldownMs)); err != nil {
			return err
		}
	}
	if c.Windows.BurstMs > 0 {
		if err := st.put(tx, keyBurst(c.SessionID), nil, msDuration(c.Windows.BurstMs)); err != nil {
			return err
		}
	}
	return nil
}

// staffBody is a staff order's answer: the order object as it is at this
// index, plus the fields a guest's success carries (its status is the
// order's current one).
func staffBody(ctx *raftfsm.ApplyContext, body successBody) ([]byte, error) {
	plain, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	o, found, err := store.GetOrder(ctx.DB, body.OrderID)
	if err != nil || !found {
		return plain, err
	}
	var obj, fields map[string]any
	if err := json.Unmarshal(mustJSON(o), &obj); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(plain, &fields); err != nil {
		return nil, err
	}
	for k, v := range fields { // every key is set: the order of the walk does not matter
		if k != "status" {
			obj[k] = v
		}
	}
	return json.Marshal(obj)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are encoded here
	}
	return b
}

// insertOrder saves o under the proposer's candidate id; on a
// collision it walks to the next free id, the same way on every node (the
// ids in use are in st's memory: the walk reads no file).
func insertOrder(ctx *raftfsm.ApplyContext, st *admitState, o store.Order, candidate int64, replay store.OrderReplay) (int64, error) {
	id, err := st.freeID(ctx, candidate)
	if err != nil {
		return 0, err
	}
	o.OrderID = id
	if err := store.AddOrder(ctx.DB, o, ctx.WallTime, replay); err != nil {
		return 0, err
	}
	st.ids[id] = struct{}{}
	st.newestID.Store(id)
	return id, nil
}

type orderEvent struct {
	Type  string      `json:"type"`
	Order store.Order `json:"order"`
}

func emitOrder(ctx *raftfsm.ApplyContext, typ string, o store.Order) {
	ctx.Emit(typ, mustJSON(orderEvent{Type: typ, Order: o}))
}
