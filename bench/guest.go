package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	// maxAttempts bounds the POSTs of one tap.
	maxAttempts = 40
	// orderDeadline bounds one tap from its first send.
	orderDeadline = 2 * time.Minute
	// maxWait caps one Retry-After wait.
	maxWait = 10 * time.Second
	// reconcilePolls is how often a 409 is reconciled through the order
	// history, 400 ms × attempt apart, as order-sdk.js does.
	reconcilePolls = 5
	reconcileStep  = 400 * time.Millisecond
)

// intendedOrder is one order a guest means to place once, whatever taps,
// retries and keys it takes.
type intendedOrder struct {
	table       *table
	clientID    string
	cart        []line
	cartKey     string
	total       int
	allowRepeat bool
	keys        []string // every Idempotency-Key sent for it, lower case
	start       time.Time

	mu      sync.Mutex
	acks    map[int64]string // acknowledged orderId → requestId of the answer
	ackedAt time.Time
}

// ackedIDs is the distinct acknowledged order ids.
func (o *intendedOrder) ackedIDs() map[int64]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[int64]string, len(o.acks))
	for k, v := range o.acks {
		m[k] = v
	}
	return m
}

// tapSpec is one concurrent sender of an intended order.
type tapSpec struct {
	key     string
	primary bool
	drop    bool // drop the first response (lost-response fault)
}

type orderBody struct {
	Items         []line `json:"items"`
	ExpectedTotal int    `json:"expectedTotal"`
	AllowRepeat   bool   `json:"allowRepeat"`
}

type orderAnswer struct {
	RequestID        string `json:"requestId"`
	Allowed          bool   `json:"allowed"`
	OrderID          int64  `json:"orderId"`
	Status           string `json:"status"`
	TotalPrice       int    `json:"totalPrice"`
	IdempotentReplay bool   `json:"idempotentReplay"`
}

// histOrder is an order object as the guest history returns it.
type histOrder struct {
	OrderID   int64   `json:"orderId"`
	SessionID string  `json:"sessionId"`
	Status    string  `json:"status"`
	RequestID *string `json:"requestId"`
	Items     []struct {
		MenuID   string `json:"menuId"`
		Quantity int    `json:"quantity"`
		Toppings []struct {
			ToppingID string `json:"toppingId"`
		} `json:"toppings"`
		Options []struct {
			GroupID  string `json:"groupId"`
			OptionID string `json:"optionId"`
		} `json:"options"`
		Note *string `json:"note"`
	} `json:"items"`
	TotalPrice int `json:"totalPrice"`
}

func (o *histOrder) requestID() string {
	if o.RequestID == nil {
		return ""
	}
	return normKey(*o.RequestID)
}

func (o *histOrder) cartKey() string {
	lines := make([]line, 0, len(o.Items))
	for _, it := range o.Items {
		l := line{MenuID: it.MenuID, Quantity: it.Quantity, Toppings: []string{}}
		for _, tp := range it.Toppings {
			l.Toppings = append(l.Toppings, tp.ToppingID)
		}
		for _, o := range it.Options {
			if l.Options == nil {
				l.Options = map[string][]string{}
			}
			l.Options[o.GroupID] = append(l.Options[o.GroupID], o.OptionID)
		}
		if it.Note != nil {
			l.Note = *it.Note
		}
		lines = append(lines, l)
	}
	return cartKey(lines)
}

// normKey is an Idempotency-Key the way the server compares it.
func normKey(k string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(k), `"`))
}

// placeIntended places one intended order with whatever faults the dice
// pick, and waits for all its taps. It reports whether it was acknowledged.
func (r *runner) placeIntended(ctx context.Context, g *guest) bool {
	cart, allowRepeat := g.table.claimCart(func() []line { return randomCart(g.rng, r.items) })
	o := &intendedOrder{
		table:       g.table,
		clientID:    g.clientID,
		cart:        cart,
		cartKey:     cartKey(cart),
		total:       cartTotal(cart, r.items),
		allowRepeat: allowRepeat,
		acks:        map[int64]string{},
	}
	// Draw every die every time so a seed replays the same faults.
	lost := g.dice.Float64() < r.cfg.LostResponse
	double := g.dice.Float64() < r.cfg.DoubleTap
	change := g.dice.Float64() < r.cfg.KeyChange && !allowRepeat

	key := newUUIDv4()
	o.keys = []string{key}
	taps := []tapSpec{{key: key, primary: true, drop: lost}}
	if lost {
		r.lostInjected.Add(1)
	}
	if double {
		taps = append(taps, tapSpec{key: key})
		r.doubleTaps.Add(1)
	}
	if change {
		// Another tap, a new key, the same cart: the payload window has to
		// make it the same order.
		k2 := newUUIDv4()
		o.keys = append(o.keys, k2)
		taps = append(taps, tapSpec{key: k2})
		r.keyChanges.Add(1)
	}
	r.mu.Lock()
	r.intended = append(r.intended, o)
	r.mu.Unlock()
	r.intendedN.Add(1)

	o.start = time.Now()
	reasons := make([]string, len(taps))
	acked := make([]bool, len(taps))
	var wg sync.WaitGroup
	for i, t := range taps {
		wg.Go(func() { acked[i], reasons[i] = r.runTap(ctx, g, o, t) })
	}
	wg.Wait()

	for i := 1; i < len(taps); i++ {
		if !acked[i] {
			r.abandonTaps.Add(1)
		}
	}
	if len(o.ackedIDs()) == 0 {
		r.failedN.Add(1)
		reason := reasons[0]
		if reason == "" {
			reason = "GAVE_UP"
		}
		r.mu.Lock()
		r.failReasons[reason]++
		r.mu.Unlock()
		return false
	}
	return true
}

// ack records an acknowledgment of o.
func (r *runner) ack(o *intendedOrder, orderID int64, requestID string) {
	now := time.Now()
	o.mu.Lock()
	first := len(o.acks) == 0
	if _, seen := o.acks[orderID]; !seen {
		o.acks[orderID] = normKey(requestID)
	}
	if first {
		o.ackedAt = now
	}
	o.mu.Unlock()
	if first {
		r.ackedN.Add(1)
		r.mu.Lock()
		r.latencies = append(r.latencies, float64(now.Sub(o.start))/float64(time.Millisecond))
		r.mu.Unlock()
	}
}

// runTap sends one tap's request until it is answered for good, the way
// order-sdk.js does: the same key for every retry; network errors, 5xx and
// 503 move to the next node (after Retry-After); cooldown, a busy session
// and an order in progress wait Retry-After and retry; a duplicate key or
// payload is reconciled through the order history first. It returns whether
// the tap was acknowledged and, if not, the last reason.
func (r *runner) runTap(ctx context.Context, g *guest, o *intendedOrder, t tapSpec) (bool, string) {
	t0 := time.Now()
	body := orderBody{Items: o.cart, ExpectedTotal: o.total, AllowRepeat: o.allowRepeat}
	path := "/api/guest/sessions/" + url.PathEscape(o.table.sessionID) + "/orders"
	shift := 0
	reason := ""
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if ctx.Err() != nil {
			return false, "CANCELLED"
		}
		if time.Since(t0) > orderDeadline {
			return false, "DEADLINE(" + reason + ")"
		}
		node := (g.home + shift) % len(r.urls)
		hdr := r.guestHeader(o.table, o.clientID)
		hdr.Set("Idempotency-Key", t.key)
		r.requests.Add(1)
		res, err := do(ctx, r.client, r.timeout, http.MethodPost, r.urls[node]+path, hdr, body, t.drop && attempt == 1)
		o.table.keepCredential(res)
		if err != nil {
			if !errors.Is(err, errDroppedResponse) {
				if ctx.Err() != nil {
					return false, "CANCELLED"
				}
				r.netErrors.Add(1)
				reason = "NETWORK_ERROR"
			}
			shift++
			if !sleep(ctx, resendPause(attempt)) {
				return false, "CANCELLED"
			}
			continue
		}
		if res.status == http.StatusOK {
			var a orderAnswer
			if json.Unmarshal(res.body, &a) != nil || a.OrderID <= 0 {
				r.reject("BAD_SUCCESS_BODY")
				r.problem(fmt.Sprintf("%s answered 200 without an orderId: %.200s", r.urls[node], res.body))
				reason = "BAD_SUCCESS_BODY"
				shift++
				if !sleep(ctx, resendPause(attempt)) {
					return false, "CANCELLED"
				}
				continue
			}
			replay := a.IdempotentReplay || strings.EqualFold(res.header.Get("X-MasterOrder-Idempotent-Replay"), "true") ||
				strings.EqualFold(res.header.Get("Idempotent-Replayed"), "true")
			if replay {
				r.replays.Add(1)
			}
			if a.TotalPrice != o.total {
				r.problem(fmt.Sprintf("order %d: totalPrice %d, the cart costs %d", a.OrderID, a.TotalPrice, o.total))
			}
			r.mu.Lock()
			r.reqLatency = append(r.reqLatency, float64(res.elapsed)/float64(time.Millisecond))
			r.mu.Unlock()
			rid := a.RequestID
			if rid == "" {
				rid = t.key
			}
			r.ack(o, a.OrderID, rid)
			return true, ""
		}

		reason = res.reasonOrStatus()
		r.reject(reason)
		switch {
		case res.status >= 500:
			// 503 (no quorum, catalog not ready…) or a node in trouble:
			// the next node, after Retry-After.
			shift++
			if !sleep(ctx, waitFor(res, resendPause(attempt))) {
				return false, "CANCELLED"
			}
		case res.status == http.StatusTooManyRequests && res.reason == reasonCooldown:
			if res.retryAfter > 0 {
				hint := int64(min(res.retryAfter, maxWait))
				for old := r.cooldownHint.Load(); hint > old && !r.cooldownHint.CompareAndSwap(old, hint); old = r.cooldownHint.Load() {
				}
			}
			if !sleep(ctx, waitFor(res, time.Second)) {
				return false, "CANCELLED"
			}
		case res.status == http.StatusConflict && (res.reason == reasonOrderInProgress || res.reason == reasonSessionBusy):
			if !sleep(ctx, waitFor(res, time.Second)) {
				return false, "CANCELLED"
			}
		case res.status == http.StatusConflict && (res.reason == reasonDuplicateKey || res.reason == reasonDuplicatePayload):
			if id, rid, ok := r.reconcile(ctx, g, o.table, node, t.key); ok {
				r.reconciled.Add(1)
				r.ack(o, id, rid)
				return true, ""
			}
			if ctx.Err() != nil {
				return false, "CANCELLED"
			}
		default:
			// Anything else will not get better by sending it again.
			return false, reason
		}
	}
	return false, "GAVE_UP(" + reason + ")"
}

// reconcile looks for the order placed with key in the session's history,
// up to five times 400 ms × attempt apart.
func (r *runner) reconcile(ctx context.Context, g *guest, t *table, node int, key string) (int64, string, bool) {
	q := url.Values{"limit": {"20"}, "requestId": {key}}
	path := "/api/guest/sessions/" + url.PathEscape(t.sessionID) + "/orders?" + q.Encode()
	for attempt := 1; attempt <= reconcilePolls; attempt++ {
		if !sleep(ctx, time.Duration(attempt)*reconcileStep) {
			return 0, "", false
		}
		res, err := do(ctx, r.client, r.timeout, http.MethodGet, r.urls[node]+path, r.guestHeader(t, g.clientID), nil, false)
		t.keepCredential(res)
		if err != nil || res.status >= 500 {
			node = (node + 1) % len(r.urls)
			continue
		}
		if res.status != http.StatusOK {
			continue
		}
		var h struct {
			Orders []histOrder `json:"orders"`
		}
		if json.Unmarshal(res.body, &h) != nil {
			continue
		}
		for _, ho := range h.Orders {
			if ho.requestID() == normKey(key) && ho.OrderID > 0 {
				return ho.OrderID, ho.requestID(), true
			}
		}
	}
	return 0, "", false
}

// waitFor is the answer's Retry-After (at least 50 ms, at most maxWait), or
// def when there is none.
func waitFor(res *response, def time.Duration) time.Duration {
	if res.retryAfter < 0 {
		return def
	}
	return min(max(res.retryAfter, 50*time.Millisecond), maxWait)
}

// resendPause is the pause before resending after a network error: growing,
// capped, jittered.
func resendPause(attempt int) time.Duration {
	d := min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second)
	return d/2 + rand.N(d/2+1)
}
