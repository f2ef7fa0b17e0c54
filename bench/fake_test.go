package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeOptions shapes a fake store: just enough of the staff and guest API
// (API.md) to exercise the bench client. Every node shares one state, as if
// replication were instant, unless an option says otherwise.
type fakeOptions struct {
	nodes         int
	password      string
	cooldown      time.Duration // per client after a success
	burst         time.Duration // per session between orders
	payloadWindow time.Duration // same session + same cart → replay
	processDelay  time.Duration // an order is "in flight" this long

	noPayloadWindow bool        // bug: a new key with the same cart makes a new order
	duplicateFirst  bool        // bug: the first order is stored twice (same requestId)
	loseOnNode      int         // bug: this node never shows the first order (-1 none)
	dropAfterCommit int         // this node closes the connection after committing every 3rd order (-1 none)
	unavailable     map[int]int // node → every n-th order POST answers 503 NO_QUORUM

	// leader is the node whose /api/cluster/status says "leader" (the
	// others "follower"; -1: none, an election). After switchAfter orders (0: never) the
	// leadership moves to switchTo. followerRefuses: a follower answers
	// every order POST 503 NO_QUORUM (a store mid-election) instead of
	// taking it as a forward.
	leader, switchAfter, switchTo int
	followerRefuses               bool
}

func defaultFakeOptions() fakeOptions {
	return fakeOptions{
		nodes:           3,
		password:        "pw",
		cooldown:        300 * time.Millisecond,
		burst:           100 * time.Millisecond,
		payloadWindow:   30 * time.Second,
		processDelay:    20 * time.Millisecond,
		loseOnNode:      -1,
		dropAfterCommit: -1,
	}
}

type fakeTopping struct {
	ToppingID string `json:"toppingId"`
	Name      string `json:"name"`
	Price     int    `json:"price"`
}

type fakeItem struct {
	MenuID    string        `json:"menuId"`
	Name      string        `json:"name"`
	NameEn    string        `json:"nameEn"`
	Category  string        `json:"category"`
	Price     int           `json:"price"`
	Available bool          `json:"available"`
	Toppings  []fakeTopping `json:"toppings"`
	Station   string        `json:"station"`
	Groups    []fakeGroup   `json:"optionGroups"`
}

type fakeGroup struct {
	GroupID string       `json:"groupId"`
	Name    string       `json:"name"`
	Min     int          `json:"min"`
	Max     int          `json:"max"`
	Options []fakeOption `json:"options"`
}

type fakeOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Price    int    `json:"price"`
}

type fakeOptionRef struct {
	GroupID  string `json:"groupId"`
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Price    int    `json:"price"`
}

type fakeOrderLine struct {
	MenuID    string          `json:"menuId"`
	Name      string          `json:"name"`
	Quantity  int             `json:"quantity"`
	Toppings  []fakeTopping   `json:"toppings"`
	UnitPrice int             `json:"unitPrice"`
	LineTotal int             `json:"lineTotal"`
	Station   string          `json:"station"`
	Options   []fakeOptionRef `json:"options"`
	Note      *string         `json:"note"`
}

type fakeOrder struct {
	OrderID    int64           `json:"orderId"`
	SessionID  string          `json:"sessionId"`
	TableID    string          `json:"tableId"`
	Status     string          `json:"status"`
	Items      []fakeOrderLine `json:"items"`
	TotalPrice int             `json:"totalPrice"`
	CreatedAt  string          `json:"createdAt"`
	UpdatedAt  string          `json:"updatedAt"`
	RequestID  *string         `json:"requestId"`
	Source     string          `json:"source"`
	TicketNo   int64           `json:"ticketNo"`
	Bumped     []string        `json:"bumped"`
}

// view is the item as the server answers it (api/openapi.yaml MenuItem):
// the fake keeps only what the bench sends.
func (it fakeItem) view() map[string]any {
	toppings := make([]map[string]any, 0, len(it.Toppings))
	for _, t := range it.Toppings {
		toppings = append(toppings, map[string]any{"toppingId": t.ToppingID, "name": t.Name, "price": t.Price, "soldOut": false})
	}
	groups := it.Groups
	if groups == nil {
		groups = []fakeGroup{}
	}
	return map[string]any{"menuId": it.MenuID, "name": it.Name, "nameEn": it.NameEn, "category": it.Category, "price": it.Price,
		"available": it.Available, "sortOrder": 0, "soldOut": !it.Available, "toppings": toppings, "names": map[string]string{},
		"description": "", "descriptionEn": "", "allergens": []string{}, "imageUrl": nil, "station": it.station(), "optionGroups": groups}
}

func (it fakeItem) station() string {
	if it.Station == "" {
		return "kitchen"
	}
	return it.Station
}

type fakeResult struct {
	RequestID        string `json:"requestId"`
	Allowed          bool   `json:"allowed"`
	OrderID          int64  `json:"orderId"`
	Status           string `json:"status"`
	TotalPrice       int    `json:"totalPrice"`
	IdempotentReplay bool   `json:"idempotentReplay"`
}

type fakeCached struct {
	fp     string
	result fakeResult
}

type fakeSession struct {
	id, tableID, pin string
	inflight         bool
	burstUntil       time.Time
	window           map[string]windowEntry // fingerprint → order
}

type windowEntry struct {
	until  time.Time
	result fakeResult
}

type fakeStore struct {
	opt     fakeOptions
	servers []*httptest.Server

	mu            sync.Mutex
	token         string
	menu          map[string]*fakeItem
	stock         map[string]*int
	sessions      map[string]*fakeSession
	orders        []*fakeOrder
	nextID        int64
	keys          map[string]*fakeCached
	inflightKeys  map[string]bool
	cooldownUntil map[string]time.Time
	hidden        map[int]map[int64]bool
	commits       int
	posts         map[int]int
	injected      bool
	leader        int
	term          int
	arrived       map[int]int // node → order POSTs that arrived there
	admitted      map[int]int // node → new orders it admitted
	forwarded     map[int]int // node → orders it admitted as a follower
}

// newFake starts opt.nodes fake nodes on 127.0.0.1 sharing one state.
func newFake(t *testing.T, opt fakeOptions) *fakeStore {
	t.Helper()
	s := &fakeStore{
		opt:           opt,
		token:         "tok-" + randomID(16),
		menu:          map[string]*fakeItem{},
		stock:         map[string]*int{},
		sessions:      map[string]*fakeSession{},
		nextID:        1000,
		keys:          map[string]*fakeCached{},
		inflightKeys:  map[string]bool{},
		cooldownUntil: map[string]time.Time{},
		hidden:        map[int]map[int64]bool{},
		posts:         map[int]int{},
		leader:        opt.leader,
		term:          2,
		arrived:       map[int]int{},
		admitted:      map[int]int{},
		forwarded:     map[int]int{},
	}
	for n := range opt.nodes {
		srv := httptest.NewServer(s.handler(n))
		t.Cleanup(srv.Close)
		s.servers = append(s.servers, srv)
	}
	return s
}

func (s *fakeStore) urls() []string {
	u := make([]string, len(s.servers))
	for i, srv := range s.servers {
		u[i] = srv.URL
	}
	return u
}

// orderCount is the orders the store holds (what the kitchen would see).
func (s *fakeStore) orderCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, reason string, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	}
	writeJSON(w, status, map[string]any{"allowed": false, "reasonCode": reason, "message": reason})
}

var (
	fakeUUIDv4   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	fakeClientID = regexp.MustCompile(`^guest-[A-Za-z0-9_-]{8,64}$`)
)

func (s *fakeStore) handler(node int) http.Handler {
	mux := http.NewServeMux()
	staff := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+s.token {
				writeErr(w, 401, "UNAUTHORIZED", 0)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("POST /api/staff/login", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Password string `json:"password"`
		}
		if json.NewDecoder(r.Body).Decode(&b) != nil || b.Password != s.opt.password {
			writeErr(w, 401, "UNAUTHORIZED", 0)
			return
		}
		writeJSON(w, 200, map[string]string{"token": s.token, "role": "manager", "expiresAt": time.Now().Add(12 * time.Hour).UTC().Format(time.RFC3339)})
	})
	mux.HandleFunc("PUT /api/staff/menu/{menuId}", staff(func(w http.ResponseWriter, r *http.Request) {
		var it fakeItem
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil || it.Name == "" || it.Price < 0 {
			writeErr(w, 400, "INVALID_MENU_ITEM", 0)
			return
		}
		it.MenuID = r.PathValue("menuId")
		s.mu.Lock()
		s.menu[it.MenuID] = &it
		s.mu.Unlock()
		writeJSON(w, 200, it.view())
	}))
	// No process figures, only where the orders arrived (a labelled
	// counter appears once counted, as client_golang writes it).
	mux.HandleFunc("GET /metrics", staff(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.mu.Lock()
		admitted, forwarded := s.admitted[node], s.forwarded[node]
		s.mu.Unlock()
		io.WriteString(w, "# a fake node has no process metrics\n")
		if admitted > 0 {
			fmt.Fprintf(w, "masterorder_orders_admitted_total{source=\"guest\"} %d\n", admitted)
		}
		fmt.Fprintf(w, "masterorder_forwarded_proposals_total %d\n", forwarded)
	}))
	mux.HandleFunc("GET /api/cluster/status", staff(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		leader, term := s.leader, s.term
		s.mu.Unlock()
		state := "follower"
		if node == leader {
			state = "leader"
		}
		var known any // null: no leader known (an election)
		if leader >= 0 && leader < len(s.servers) {
			known = map[string]string{"id": fmt.Sprintf("n%d", leader), "httpAddr": strings.TrimPrefix(s.servers[leader].URL, "http://")}
		}
		writeJSON(w, 200, map[string]any{"nodeId": fmt.Sprintf("n%d", node), "state": state, "leader": known,
			"term": term, "commitIndex": 0, "appliedIndex": 0, "nodes": nil, "fsmTime": 0, "clockSuspect": false, "stale": false})
	}))
	mux.HandleFunc("PUT /api/staff/stock/{sku}", staff(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Quantity *int `json:"quantity"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			writeErr(w, 400, "INVALID_STOCK", 0)
			return
		}
		s.mu.Lock()
		s.stock[r.PathValue("sku")] = b.Quantity
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"sku": r.PathValue("sku"), "quantity": b.Quantity})
	}))
	mux.HandleFunc("POST /api/staff/sessions", staff(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			TableID string `json:"tableId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.TableID == "" || len(b.TableID) > 64 {
			writeErr(w, 400, "INVALID_TABLE", 0)
			return
		}
		sess := &fakeSession{id: randomID(24), tableID: b.TableID, pin: fmt.Sprintf("%04d", rand.IntN(10000)), window: map[string]windowEntry{}}
		s.mu.Lock()
		s.sessions[sess.id] = sess
		s.mu.Unlock()
		writeJSON(w, 200, map[string]string{"sessionId": sess.id, "tableId": sess.tableID, "pin": sess.pin, "status": "ACTIVE", "guestUrl": "/g/" + sess.id})
	}))
	guestSession := func(w http.ResponseWriter, r *http.Request) *fakeSession {
		s.mu.Lock()
		sess := s.sessions[r.PathValue("id")]
		s.mu.Unlock()
		if sess == nil {
			writeErr(w, 404, "SESSION_NOT_FOUND", 0)
			return nil
		}
		if r.Header.Get("X-Session-PIN") != sess.pin {
			writeErr(w, 401, "INVALID_PIN", 0)
			return nil
		}
		return sess
	}
	mux.HandleFunc("GET /api/guest/sessions/{id}/menu", func(w http.ResponseWriter, r *http.Request) {
		if guestSession(w, r) == nil {
			return
		}
		s.mu.Lock()
		items := make([]map[string]any, 0, len(s.menu))
		for _, it := range s.menu {
			items = append(items, it.view())
		}
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"items": items, "categories": map[string]any{}})
	})
	mux.HandleFunc("GET /api/guest/sessions/{id}/orders", func(w http.ResponseWriter, r *http.Request) {
		sess := guestSession(w, r)
		if sess == nil {
			return
		}
		limit := 50
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeErr(w, 400, "INVALID_LIMIT", 0)
				return
			}
			limit = min(n, 200)
		}
		want := normKey(r.URL.Query().Get("requestId"))
		s.mu.Lock()
		out := []fakeOrder{}
		for i := len(s.orders) - 1; i >= 0 && len(out) < limit; i-- {
			o := s.orders[i]
			if o.SessionID != sess.id || s.hidden[node][o.OrderID] {
				continue
			}
			if want != "" && (o.RequestID == nil || *o.RequestID != want) {
				continue
			}
			out = append(out, *o)
		}
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"orders": out})
	})
	mux.HandleFunc("POST /api/guest/sessions/{id}/orders", func(w http.ResponseWriter, r *http.Request) {
		s.placeOrder(node, w, r)
	})
	return mux
}

// placeOrder follows the decision order of API.md closely enough for the
// bench: validation, session, key replay, key in flight, cooldown, session
// burst/in flight, payload window, price, stock, then the order.
func (s *fakeStore) placeOrder(node int, w http.ResponseWriter, r *http.Request) {
	key := normKey(r.Header.Get("Idempotency-Key"))
	if !fakeUUIDv4.MatchString(key) {
		writeErr(w, 400, "INVALID_IDEMPOTENCY_KEY", 0)
		return
	}
	client := r.Header.Get("X-MasterOrder-Client-Id")
	if !fakeClientID.MatchString(client) {
		writeErr(w, 400, "INVALID_CLIENT_ID", 0)
		return
	}
	var body struct {
		Items         []line `json:"items"`
		ExpectedTotal *int   `json:"expectedTotal"`
		AllowRepeat   bool   `json:"allowRepeat"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Items) < 1 || len(body.Items) > 50 {
		writeErr(w, 400, "INVALID_ORDER", 0)
		return
	}

	s.mu.Lock()
	s.arrived[node]++
	if s.opt.followerRefuses && node != s.leader {
		s.mu.Unlock()
		writeErr(w, 503, "NO_QUORUM", time.Second)
		return
	}
	if n := s.opt.unavailable[node]; n > 0 {
		s.posts[node]++
		if s.posts[node]%n == 0 {
			s.mu.Unlock()
			writeErr(w, 503, "NO_QUORUM", time.Second)
			return
		}
	}
	lines := make([]fakeOrderLine, 0, len(body.Items))
	total := 0
	for _, l := range body.Items {
		it := s.menu[l.MenuID]
		if it == nil || l.Quantity < 1 || l.Quantity > 99 {
			s.mu.Unlock()
			writeErr(w, 400, "INVALID_ORDER", 0)
			return
		}
		ol := fakeOrderLine{MenuID: it.MenuID, Name: it.Name, Quantity: l.Quantity, Toppings: []fakeTopping{}, UnitPrice: it.Price, Station: it.station()}
		for _, id := range l.Toppings {
			i := slices.IndexFunc(it.Toppings, func(t fakeTopping) bool { return t.ToppingID == id })
			if i < 0 {
				s.mu.Unlock()
				writeErr(w, 400, "INVALID_ORDER", 0)
				return
			}
			ol.Toppings = append(ol.Toppings, it.Toppings[i])
			ol.UnitPrice += it.Toppings[i].Price
		}
		// Options as the server takes them: known groups and ids, min..max.
		ol.Options = []fakeOptionRef{}
		for g := range l.Options {
			if !slices.ContainsFunc(it.Groups, func(fg fakeGroup) bool { return fg.GroupID == g }) {
				s.mu.Unlock()
				writeErr(w, 400, "INVALID_ORDER", 0)
				return
			}
		}
		for _, g := range it.Groups {
			ids := l.Options[g.GroupID]
			if len(ids) < g.Min || len(ids) > g.Max {
				s.mu.Unlock()
				writeErr(w, 400, "INVALID_ORDER", 0)
				return
			}
			for _, id := range ids {
				i := slices.IndexFunc(g.Options, func(o fakeOption) bool { return o.OptionID == id })
				if i < 0 {
					s.mu.Unlock()
					writeErr(w, 400, "INVALID_ORDER", 0)
					return
				}
				ol.Options = append(ol.Options, fakeOptionRef{GroupID: g.GroupID, OptionID: id, Name: g.Options[i].Name, Price: g.Options[i].Price})
				ol.UnitPrice += g.Options[i].Price
			}
		}
		if l.Note != "" {
			n := l.Note
			ol.Note = &n
		}
		ol.LineTotal = ol.UnitPrice * ol.Quantity
		total += ol.LineTotal
		lines = append(lines, ol)
	}
	sess := s.sessions[r.PathValue("id")]
	if sess == nil {
		s.mu.Unlock()
		writeErr(w, 404, "SESSION_NOT_FOUND", 0)
		return
	}
	if r.Header.Get("X-Session-PIN") != sess.pin {
		s.mu.Unlock()
		writeErr(w, 401, "INVALID_PIN", 0)
		return
	}
	sum := sha256.Sum256([]byte(sess.id + "\n" + cartKey(body.Items)))
	fp := hex.EncodeToString(sum[:])
	now := time.Now()
	if c := s.keys[key]; c != nil {
		s.mu.Unlock()
		if c.fp != fp {
			writeErr(w, 422, "IDEMPOTENCY_KEY_REUSED", 0)
			return
		}
		writeReplay(w, c.result)
		return
	}
	if s.inflightKeys[key] {
		s.mu.Unlock()
		writeErr(w, 409, "DUPLICATE_IDEMPOTENCY_KEY", time.Second)
		return
	}
	if until := s.cooldownUntil[client]; now.Before(until) {
		s.mu.Unlock()
		writeErr(w, 429, "COOLDOWN_ACTIVE", until.Sub(now))
		return
	}
	if sess.inflight || now.Before(sess.burstUntil) {
		wait := max(sess.burstUntil.Sub(now), time.Second)
		s.mu.Unlock()
		writeErr(w, 409, "SESSION_ORDER_IN_PROGRESS", wait)
		return
	}
	if e, ok := sess.window[fp]; ok && !body.AllowRepeat && !s.opt.noPayloadWindow && now.Before(e.until) {
		s.mu.Unlock()
		writeReplay(w, e.result)
		return
	}
	if body.ExpectedTotal != nil && *body.ExpectedTotal != total {
		s.mu.Unlock()
		writeErr(w, 400, "PRICE_MISMATCH", 0)
		return
	}
	need := map[string]int{}
	for _, l := range body.Items {
		need[l.MenuID] += l.Quantity
		for _, tp := range l.Toppings {
			need[tp] += l.Quantity
		}
	}
	for sku, n := range need {
		if q := s.stock[sku]; q != nil && *q < n {
			s.mu.Unlock()
			writeErr(w, 409, "OUT_OF_STOCK", 0)
			return
		}
	}
	for sku, n := range need {
		if q := s.stock[sku]; q != nil {
			*q -= n
		}
	}
	s.inflightKeys[key] = true
	sess.inflight = true
	s.mu.Unlock()

	time.Sleep(s.opt.processDelay)

	s.mu.Lock()
	s.nextID++
	rid := key
	stamp := time.Now().UTC().Format(time.RFC3339)
	o := &fakeOrder{OrderID: s.nextID, SessionID: sess.id, TableID: sess.tableID, Status: "ACCEPTED", Items: lines,
		TotalPrice: total, CreatedAt: stamp, UpdatedAt: stamp, RequestID: &rid, Source: "guest", TicketNo: int64(len(s.orders) + 1), Bumped: []string{}}
	s.orders = append(s.orders, o)
	s.admitted[node]++
	if node != s.leader {
		s.forwarded[node]++
	}
	if s.opt.switchAfter > 0 && len(s.orders) == s.opt.switchAfter {
		s.leader, s.term = s.opt.switchTo, s.term+1
	}
	res := fakeResult{RequestID: key, Allowed: true, OrderID: o.OrderID, Status: o.Status, TotalPrice: total}
	s.keys[key] = &fakeCached{fp: fp, result: res}
	sess.window[fp] = windowEntry{until: time.Now().Add(s.opt.payloadWindow), result: res}
	s.cooldownUntil[client] = time.Now().Add(s.opt.cooldown)
	sess.burstUntil = time.Now().Add(s.opt.burst)
	delete(s.inflightKeys, key)
	sess.inflight = false
	if len(s.orders) == 1 && s.opt.loseOnNode >= 0 {
		s.hidden[s.opt.loseOnNode] = map[int64]bool{o.OrderID: true}
	}
	if s.opt.duplicateFirst && !s.injected {
		s.injected = true
		s.nextID++
		dup := *o
		dup.OrderID = s.nextID
		s.orders = append(s.orders, &dup)
	}
	drop := false
	if node == s.opt.dropAfterCommit {
		s.commits++
		drop = s.commits%3 == 0
	}
	s.mu.Unlock()

	if drop {
		// The order is committed, the answer never arrives.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
	}
	writeJSON(w, 200, res)
}

func writeReplay(w http.ResponseWriter, res fakeResult) {
	res.IdempotentReplay = true
	w.Header().Set("X-MasterOrder-Idempotent-Replay", "true")
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, 200, res)
}
