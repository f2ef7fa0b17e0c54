package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// menuItem is one item the bench puts on the menu for its run.
type menuItem struct {
	ID       string
	Name     string
	NameEn   string
	Category string
	Price    int
	Toppings []toppingDef
	Tracked  bool // stock tracked with a large quantity; else null
	// Groups are option groups (required when Min ≥ 1); Station prepares it.
	Groups  []optionGroupDef
	Station string
}

type optionGroupDef struct {
	ID       string
	Name     string
	Min, Max int
	Options  []optionDef
}

type optionDef struct {
	ID    string
	Name  string
	Price int
}

// body is the item as PUT /api/staff/menu takes it.
func (it menuItem) body() map[string]any {
	toppings := make([]map[string]any, 0, len(it.Toppings))
	for _, tp := range it.Toppings {
		toppings = append(toppings, map[string]any{"toppingId": tp.ID, "name": tp.Name, "price": tp.Price})
	}
	groups := make([]map[string]any, 0, len(it.Groups))
	for _, g := range it.Groups {
		opts := make([]map[string]any, 0, len(g.Options))
		for _, o := range g.Options {
			opts = append(opts, map[string]any{"optionId": o.ID, "name": o.Name, "price": o.Price})
		}
		groups = append(groups, map[string]any{"groupId": g.ID, "name": g.Name, "min": g.Min, "max": g.Max, "options": opts})
	}
	station := it.Station
	if station == "" {
		station = "kitchen"
	}
	return map[string]any{
		"name": it.Name, "nameEn": it.NameEn, "category": it.Category,
		"price": it.Price, "available": true, "toppings": toppings,
		"station": station, "optionGroups": groups,
	}
}

type toppingDef struct {
	ID      string
	Name    string
	Price   int
	Tracked bool
}

// benchMenu is the run's menu: ids prefixed with the run's prefix so runs
// never collide with the store's menu or each other.
func benchMenu(prefix string) []menuItem {
	id := func(s string) string { return prefix + "-" + s }
	return []menuItem{
		{ID: id("ramen"), Name: "醤油ラーメン", NameEn: "Shoyu ramen", Category: "noodles", Price: 900, Tracked: true, Station: "noodles",
			Toppings: []toppingDef{{ID: id("egg"), Name: "味玉", Price: 120, Tracked: true}, {ID: id("chashu"), Name: "チャーシュー", Price: 250}},
			Groups: []optionGroupDef{
				{ID: "firmness", Name: "麺のかたさ", Min: 1, Max: 1, Options: []optionDef{{ID: "soft", Name: "やわらかめ"}, {ID: "normal", Name: "ふつう"}, {ID: "firm", Name: "かため"}}},
				{ID: "extras", Name: "追加", Min: 0, Max: 2, Options: []optionDef{{ID: "garlic", Name: "にんにく", Price: 50}, {ID: "spicy", Name: "辛味", Price: 100}, {ID: "oil", Name: "背脂", Price: 0}}}}},
		{ID: id("tsukemen"), Name: "つけ麺", NameEn: "Tsukemen", Category: "noodles", Price: 1000, Station: "noodles",
			Toppings: []toppingDef{{ID: id("nori"), Name: "海苔", Price: 80}, {ID: id("menma"), Name: "メンマ", Price: 100, Tracked: true}}},
		{ID: id("gyoza"), Name: "餃子", NameEn: "Gyoza", Category: "sides", Price: 450, Tracked: true},
		{ID: id("karaage"), Name: "唐揚げ", NameEn: "Karaage", Category: "sides", Price: 600},
		{ID: id("rice"), Name: "ライス", NameEn: "Rice", Category: "sides", Price: 250},
		{ID: id("beer"), Name: "生ビール", NameEn: "Draft beer", Category: "drinks", Price: 550, Tracked: true, Station: "drinks",
			Groups: []optionGroupDef{{ID: "size", Name: "サイズ", Min: 1, Max: 1, Options: []optionDef{{ID: "medium", Name: "中", Price: 0}, {ID: "large", Name: "大", Price: 200}}}}},
	}
}

// table is one table session of the run.
type table struct {
	idx       int
	tableID   string
	sessionID string
	pin       string

	mu sync.Mutex
	// credential is the session credential a guest answer gave this
	// table's phones: the guest SDK keeps it after the first right PIN
	// and sends it with the PIN on every call (order-sdk.js), so a box
	// checks it instead of weighing the PIN against the lockout counters.
	credential string
	carts      map[string]bool // normalized carts already ordered in this session
	reserved   int             // intended orders started in this session
	capped     bool
}

// reserve claims one intended order for this session; false once the
// per-session cap is reached.
func (t *table) reserve() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reserved >= MaxIntendedPerSession {
		t.capped = true
		return false
	}
	t.reserved++
	return true
}

// claimCart picks a cart no one at this table has ordered yet, so the
// session's payload window never turns a new intended order into a replay of
// an earlier one. After many misses it gives up and orders a repeat with
// allowRepeat (the guest confirmed "the same again").
func (t *table) claimCart(gen func() []line) (cart []line, allowRepeat bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for range 64 {
		c := gen()
		k := cartKey(c)
		if !t.carts[k] {
			t.carts[k] = true
			return c, false
		}
	}
	return gen(), true
}

// staffCall is a staff API call with the bearer token, retried against the
// next URL on network errors, 5xx and 503 (honouring Retry-After). out may be
// nil.
func (r *runner) staffCall(ctx context.Context, method, path string, body, out any) error {
	hdr := http.Header{}
	if r.token != "" {
		hdr.Set("Authorization", "Bearer "+r.token)
	}
	var last error
	for attempt := range 8 {
		base := r.urls[attempt%len(r.urls)]
		res, err := do(ctx, r.client, r.timeout, method, base+path, hdr, body, false)
		wait := time.Duration(attempt+1) * 200 * time.Millisecond
		switch {
		case err != nil:
			last = fmt.Errorf("%s %s%s: %w", method, base, path, err)
		case res.status >= 500:
			last = fmt.Errorf("%s %s%s: %s", method, base, path, res)
			if res.retryAfter >= 0 {
				wait = min(max(res.retryAfter, 100*time.Millisecond), 5*time.Second)
			}
		case res.status >= 300:
			return fmt.Errorf("%s %s%s: %s", method, base, path, res)
		default:
			if out != nil {
				if err := json.Unmarshal(res.body, out); err != nil {
					return fmt.Errorf("%s %s%s: decoding answer: %w", method, base, path, err)
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
	return last
}

// setup logs in, puts the run's menu and stock in place and opens the
// tables' sessions.
func (r *runner) setup(ctx context.Context) error {
	var login struct {
		Token string `json:"token"`
	}
	if err := r.staffCall(ctx, http.MethodPost, "/api/staff/login", map[string]string{"password": r.cfg.StaffPassword}, &login); err != nil {
		return fmt.Errorf("staff login: %w", err)
	}
	if login.Token == "" {
		return fmt.Errorf("staff login: no token in the answer")
	}
	r.token = login.Token
	if err := r.putMenu(ctx, r.stockQuantity()); err != nil {
		return err
	}

	r.tables = make([]*table, r.cfg.Tables)
	for i := range r.tables {
		t := &table{idx: i, tableID: fmt.Sprintf("%s-T%d", r.prefix, i+1), carts: map[string]bool{}}
		var s struct {
			SessionID string `json:"sessionId"`
			PIN       string `json:"pin"`
		}
		if err := r.staffCall(ctx, http.MethodPost, "/api/staff/sessions", map[string]string{"tableId": t.tableID}, &s); err != nil {
			return fmt.Errorf("opening session for %s: %w", t.tableID, err)
		}
		if s.SessionID == "" || s.PIN == "" {
			return fmt.Errorf("opening session for %s: answer without sessionId or pin", t.tableID)
		}
		t.sessionID, t.pin = s.SessionID, s.PIN
		r.tables[i] = t
	}
	r.waitReplicated(ctx)
	return nil
}

// putMenu puts the run's menu items in place and sets the stock of its
// tracked skus to stockQty (the others untracked).
func (r *runner) putMenu(ctx context.Context, stockQty int) error {
	r.stock = map[string]int{}
	for _, it := range r.items {
		if err := r.staffCall(ctx, http.MethodPut, "/api/staff/menu/"+url.PathEscape(it.ID), it.body(), nil); err != nil {
			return fmt.Errorf("menu item %s: %w", it.ID, err)
		}
	}
	setStock := func(sku string, tracked bool) error {
		var q any // null: not tracked
		if tracked {
			q = stockQty
		}
		if err := r.staffCall(ctx, http.MethodPut, "/api/staff/stock/"+url.PathEscape(sku), map[string]any{"quantity": q}, nil); err != nil {
			return fmt.Errorf("stock %s: %w", sku, err)
		}
		if tracked {
			r.stock[sku] = stockQty
		}
		return nil
	}
	for _, it := range r.items {
		if err := setStock(it.ID, it.Tracked); err != nil {
			return err
		}
		for _, tp := range it.Toppings {
			if err := setStock(tp.ID, tp.Tracked); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxStockQuantity is the largest quantity the staff API accepts
// (PUT /api/staff/stock answers 400 INVALID_STOCK above it).
const maxStockQuantity = 1_000_000

// stockQuantity is far more than the run can use, so stock never runs out,
// and never more than the server accepts: at most 9 units of one sku per
// order, so the cap still covers 111,111 orders.
func (r *runner) stockQuantity() int {
	perOrder := 3 * 3 // at most 3 lines of quantity at most 3
	orders := r.cfg.Tables * min(r.cfg.GuestsPerTable*max(r.cfg.OrdersPerGuest, 1), MaxIntendedPerSession)
	if r.cfg.OrdersPerGuest == 0 {
		orders = r.cfg.Tables * MaxIntendedPerSession
	}
	return min(maxStockQuantity, max(100000, 4*perOrder*orders))
}

// waitReplicated waits (bounded) until every node serves the last session
// and the run's menu, so guests sent to a follower do not meet an unknown
// menu item or session only because that node is a moment behind.
func (r *runner) waitReplicated(ctx context.Context) {
	last := r.tables[len(r.tables)-1]
	lastItem := r.items[len(r.items)-1].ID
	deadline := time.Now().Add(r.replicationWait)
	var wg sync.WaitGroup
	for _, base := range r.urls {
		wg.Go(func() {
			hdr := r.guestHeader(last, r.verifyClientID)
			for {
				res, err := do(ctx, r.client, r.timeout, http.MethodGet, base+"/api/guest/sessions/"+url.PathEscape(last.sessionID)+"/menu", hdr, nil, false)
				if err == nil && res.status == http.StatusOK && strings.Contains(string(res.body), lastItem) {
					return
				}
				if time.Now().After(deadline) || !sleep(ctx, 200*time.Millisecond) {
					r.note(fmt.Sprintf("%s did not serve the bench menu and sessions within %s of setup; early orders there may be rejected", base, r.replicationWait))
					return
				}
			}
		})
	}
	wg.Wait()
}

// guestHeader is the headers of every guest call for this table, as the
// guest SDK sends them: the PIN, and the session credential once a box
// gave one (keepCredential).
func (r *runner) guestHeader(t *table, clientID string) http.Header {
	h := http.Header{}
	h.Set("X-Session-PIN", t.pin)
	h.Set("X-MasterOrder-Client-Id", clientID)
	t.mu.Lock()
	cred := t.credential
	t.mu.Unlock()
	if cred != "" {
		h.Set(headerCredential, cred)
	}
	return h
}

const headerCredential = "X-Session-Credential"

// keepCredential keeps the session credential of a guest answer for this
// table's next calls, as the guest SDK does.
func (t *table) keepCredential(res *response) {
	if res == nil {
		return
	}
	if cred := res.header.Get(headerCredential); cred != "" {
		t.mu.Lock()
		t.credential = cred
		t.mu.Unlock()
	}
}
