package orders

import (
	"encoding/json"
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
}

// cachedResult is what the KV keeps for a key and for a payload window.
type cachedResult struct {
	Fingerprint string      `json:"fp"`
	Body        successBody `json:"body"`
	// Attempt is the admitting command's attempt id (empty for a payload
	// replay's entry: its first answer was already a replay).
	Attempt string `json:"attempt,omitempty"`
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// applyPlaceOrder runs the whole admission gate and saves the order, in the
// decision order of API.md. Rejections write only their audit row.
func applyPlaceOrder(ctx *raftfsm.ApplyContext, payload []byte, cat *catalog) ([]byte, error) {
	var c placeOrderCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	audit := store.Audit{At: ctx.WallTime, RequestID: c.RequestID, ClientID: c.ClientID, SessionID: c.SessionID, Node: c.Node}
	rejectAudited := func(status int, reason string, retryAfterMs int64, skus []string) ([]byte, error) {
		audit.ReasonCode = reason
		if err := store.InsertAudit(ctx.DB, audit); err != nil {
			return nil, err
		}
		return json.Marshal(Result{Status: status, Reason: reason, RetryAfterMs: retryAfterMs, SKUs: skus})
	}
	// answer is a success: a staff order's is the whole order object, read
	// here at this index, so the handler never reads after the commit.
	answer := func(body successBody, replay bool) ([]byte, error) {
		var b []byte
		var err error
		if c.Source == "staff" {
			b, err = staffBody(ctx, body)
		} else {
			b, err = json.Marshal(body)
		}
		if err != nil {
			return nil, err
		}
		return json.Marshal(Result{Status: 200, Replay: replay, Body: b})
	}
	replay := func(r cachedResult, reason string) ([]byte, error) {
		body := r.Body
		audit.ReasonCode, audit.IdempotentReplay, audit.OrderID = reason, true, body.OrderID
		if err := store.InsertAudit(ctx.DB, audit); err != nil {
			return nil, err
		}
		// The same attempt is this very request committed again by the
		// forwarding layer: the guest's first answer, not a replay.
		own := c.Attempt != "" && r.Attempt == c.Attempt
		body.IdempotentReplay = !own
		return answer(body, !own)
	}

	// Row 3 again, inside Apply: checkout may have closed the session since
	// the node looked.
	sess, exists, err := store.GetSession(ctx.DB, c.SessionID)
	if err != nil {
		return nil, err
	}
	if !exists {
		return rejectAudited(404, "SESSION_NOT_FOUND", 0, nil)
	}
	if sess.Status != store.SessionActive {
		return rejectAudited(410, "SESSION_CLOSED", 0, nil)
	}

	// Rows 5–6: a known key replays its result, before any window can turn
	// a retry into a 429 or 409.
	if c.RequestID != "" {
		if e, live := t.Get(keyIdem(c.SessionID, c.RequestID)); live {
			var r cachedResult
			if err := json.Unmarshal(e.Value, &r); err == nil {
				if r.Fingerprint != c.Fingerprint {
					return rejectAudited(422, "IDEMPOTENCY_KEY_REUSED", 0, nil)
				}
				return replay(r, "IDEMPOTENT_REPLAY")
			}
		}
	}
	// Row 7 (same key still in progress) cannot arise: admission and save
	// are one Apply, so there is no "in progress" state to collide with.

	guest := c.Source == "guest"
	if guest {
		// Row 8: the client's cooldown after its last success.
		if e, live := t.Get(keyCooldown(c.ClientID)); live {
			return rejectAudited(429, "COOLDOWN_ACTIVE", e.ExpiresAt-ctx.Now, nil)
		}
	}
	// Row 9: checkout holds the session lock.
	if e, live := t.Get(keySessionLock(c.SessionID)); live {
		wait := e.ExpiresAt - ctx.Now
		if wait > 5000 {
			wait = 5000
		}
		return rejectAudited(409, "SESSION_BUSY", wait, nil)
	}
	if guest {
		// Row 10: one order per session per burst window.
		if e, live := t.Get(keyBurst(c.SessionID)); live {
			return rejectAudited(409, "SESSION_ORDER_IN_PROGRESS", e.ExpiresAt-ctx.Now, nil)
		}
		// Row 11: the same cart again within the window is the same order,
		// unless the guest confirmed a repeat.
		if !c.AllowRepeat {
			if e, live := t.Get(keyPayload(c.SessionID, c.Fingerprint)); live {
				var r cachedResult
				if err := json.Unmarshal(e.Value, &r); err != nil {
					return rejectAudited(409, "DUPLICATE_PAYLOAD", e.ExpiresAt-ctx.Now, nil)
				}
				// Remember the new key too: a resend of it after the window
				// must still replay, never become a second order.
				if c.RequestID != "" {
					if err := t.Put(keyIdem(c.SessionID, c.RequestID), mustJSON(cachedResult{Fingerprint: c.Fingerprint, Body: r.Body}), msDuration(c.Windows.IdempotencyMs)); err != nil {
						return nil, err
					}
				}
				return replay(r, "PAYLOAD_REPLAY")
			}
		}
	}

	// Rows 12–13: price and stock, judged on this node's replica of the
	// catalog, which is the same on every node at this index.
	menu, err := cat.at(ctx.DB)
	if err != nil {
		return nil, err
	}
	items, total, known, unavailable := priceCart(menu, c.Items)
	if !known {
		return rejectAudited(400, "INVALID_ORDER", 0, nil)
	}
	if ctx.Version < 2 && len(unavailable) > 0 {
		// Version 1 judged an unavailable item before row 12.
		return rejectAudited(409, "OUT_OF_STOCK", 0, unavailable)
	}
	if c.ExpectedTotal != nil && *c.ExpectedTotal != total {
		return rejectAudited(400, "PRICE_MISMATCH", 0, nil)
	}
	if len(unavailable) > 0 {
		return rejectAudited(409, "OUT_OF_STOCK", 0, unavailable)
	}
	need := unitsPerSKU(c.Items)
	levels, err := store.StockOf(ctx.DB, skusOf(need))
	if err != nil {
		return nil, err
	}
	var short []string
	for _, u := range need {
		if qty, tracked := levels[u.sku]; tracked && qty < u.n {
			short = append(short, u.sku)
		}
	}
	if len(short) > 0 {
		return rejectAudited(409, "OUT_OF_STOCK", 0, short)
	}

	// Admitted: take the stock (an untracked sku has none to take),
	// allocate the id, save, cache, cool down.
	for _, u := range need {
		if _, tracked := levels[u.sku]; !tracked {
			continue
		}
		if err := store.AddStock(ctx.DB, u.sku, -u.n); err != nil {
			return nil, err
		}
	}
	orderID, err := allocateOrderID(ctx, c.CandidateID)
	if err != nil {
		return nil, err
	}
	var reqID *string
	if c.RequestID != "" {
		r := c.RequestID
		reqID = &r
	}
	order := store.Order{OrderID: orderID, Seq: int64(ctx.Index), SessionID: c.SessionID, TableID: sess.TableID,
		Status: store.StatusAccepted, Items: items, TotalPrice: total, RequestID: reqID, Source: c.Source, ClientID: c.ClientID}
	if err := store.InsertOrder(ctx.DB, order, ctx.WallTime); err != nil {
		return nil, err
	}
	body := successBody{RequestID: reqID, Allowed: true, OrderID: orderID, Status: store.StatusAccepted, TotalPrice: total}
	cached := mustJSON(cachedResult{Fingerprint: c.Fingerprint, Body: body, Attempt: c.Attempt})
	if c.RequestID != "" {
		if err := t.Put(keyIdem(c.SessionID, c.RequestID), cached, msDuration(c.Windows.IdempotencyMs)); err != nil {
			return nil, err
		}
	}
	if guest {
		if c.Windows.PayloadMs > 0 {
			if err := t.Put(keyPayload(c.SessionID, c.Fingerprint), cached, msDuration(c.Windows.PayloadMs)); err != nil {
				return nil, err
			}
		}
		if c.Windows.CooldownMs > 0 {
			if err := t.Put(keyCooldown(c.ClientID), nil, msDuration(c.Windows.CooldownMs)); err != nil {
				return nil, err
			}
		}
		if c.Windows.BurstMs > 0 {
			if err := t.Put(keyBurst(c.SessionID), nil, msDuration(c.Windows.BurstMs)); err != nil {
				return nil, err
			}
		}
	}
	audit.ReasonCode, audit.OrderID = "ADMITTED", orderID
	if err := store.InsertAudit(ctx.DB, audit); err != nil {
		return nil, err
	}
	if err := store.InsertOutbox(ctx.DB, orderID, store.OutboxUpsert); err != nil {
		return nil, err
	}
	order.CreatedAt, order.UpdatedAt = store.FormatTime(ctx.WallTime), store.FormatTime(ctx.WallTime)
	// The kitchen tickets go in the same Apply: no order without its jobs.
	if _, err := queueTickets(ctx, order, escpos.KindTicket); err != nil {
		return nil, err
	}
	emitOrder(ctx, "order.created", order)
	return answer(body, false)
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

// priceCart prices normalized lines from the menu at this index. known is
// false for an unknown item or topping; unavailable lists items staff
// marked unavailable (the total counts them at their price, for row 12).
func priceCart(menu map[string]store.MenuItem, lines []admission.Line) (items []store.OrderItem, total int64, known bool, unavailable []string) {
	for _, l := range lines {
		m, found := menu[l.MenuID]
		if !found {
			return nil, 0, false, nil
		}
		if !m.Available {
			unavailable = append(unavailable, m.MenuID)
		}
		item := store.OrderItem{MenuID: m.MenuID, Name: m.Name, Quantity: l.Quantity, Toppings: []store.ToppingRef{}, UnitPrice: m.Price}
		for _, tid := range l.Toppings {
			var top *store.Topping
			for i := range m.Toppings {
				if m.Toppings[i].ToppingID == tid {
					top = &m.Toppings[i]
				}
			}
			if top == nil {
				return nil, 0, false, nil
			}
			item.Toppings = append(item.Toppings, store.ToppingRef{ToppingID: top.ToppingID, Name: top.Name, Price: top.Price})
			item.UnitPrice += top.Price
		}
		item.LineTotal = item.UnitPrice * int64(l.Quantity)
		total += item.LineTotal
		items = append(items, item)
	}
	return items, total, true, unavailable
}

type skuUnits struct {
	sku string
	n   int64
}

// unitsPerSKU sums what a cart takes per sku, in a stable order: a line of
// quantity 2 with topping egg takes 2 of the item and 2 of egg.
func unitsPerSKU(lines []admission.Line) []skuUnits {
	var out []skuUnits
	idx := map[string]int{}
	add := func(sku string, n int64) {
		if i, ok := idx[sku]; ok {
			out[i].n += n
			return
		}
		idx[sku] = len(out)
		out = append(out, skuUnits{sku, n})
	}
	for _, l := range lines {
		add(l.MenuID, int64(l.Quantity))
		for _, t := range l.Toppings {
			add(t, int64(l.Quantity))
		}
	}
	return out
}

func skusOf(need []skuUnits) []string {
	out := make([]string, len(need))
	for i, u := range need {
		out[i] = u.sku
	}
	return out
}

// allocateOrderID takes the proposer's random candidate; on a collision it
// walks to the next free id, the same way on every node.
func allocateOrderID(ctx *raftfsm.ApplyContext, candidate int64) (int64, error) {
	const max = 1<<31 - 1
	id := candidate
	if id < 1 || id > max {
		id = int64(ctx.Index%max) + 1
	}
	for i := 0; i < 1_000_000; i++ {
		taken, err := store.OrderIDTaken(ctx.DB, id)
		if err != nil {
			return 0, err
		}
		if !taken {
			return id, nil
		}
		id = id%max + 1
	}
	return 0, errOrderIDsExhausted
}

type orderEvent struct {
	Type  string      `json:"type"`
	Order store.Order `json:"order"`
}

func emitOrder(ctx *raftfsm.ApplyContext, typ string, o store.Order) {
	ctx.Emit(typ, mustJSON(orderEvent{Type: typ, Order: o}))
}
