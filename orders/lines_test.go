package orders_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
)

// seedLinesMenu (after seedMenu): ramen at the noodle station with a
// required firmness (one of three, free) and optional extras (up to two,
// priced); beer at the drinks station; gyoza and tea stay in "kitchen".
func (s *store) seedLinesMenu() {
	s.t.Helper()
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900,
		"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}, {"toppingId": "nori", "name": "海苔", "price": 80}},
		"station":  "noodles",
		"optionGroups": []map[string]any{
			{"groupId": "firmness", "name": "麺のかたさ", "nameEn": "Noodle firmness", "min": 1, "max": 1, "options": []map[string]any{
				{"optionId": "soft", "name": "やわらかめ", "nameEn": "Soft", "price": 0},
				{"optionId": "normal", "name": "ふつう", "nameEn": "Normal", "price": 0},
				{"optionId": "firm", "name": "かため", "nameEn": "Firm", "price": 0}}},
			{"groupId": "extras", "name": "追加", "nameEn": "Extras", "min": 0, "max": 2, "options": []map[string]any{
				{"optionId": "garlic", "name": "にんにく", "price": 50},
				{"optionId": "spicy", "name": "辛味", "price": 100},
				{"optionId": "chashu", "name": "チャーシュー増し", "price": 300}}}}})
	s.mustStaff(1, "PUT", "/api/staff/menu/beer", map[string]any{"name": "生ビール", "nameEn": "Draft beer", "category": "drinks", "price": 600, "station": "drinks"})
}

// ramenLine is a ramen line with options and a note (nil: none).
func ramenLine(qty int, opts map[string][]string, note any) map[string]any {
	l := line("ramen", qty)
	if opts != nil {
		l["options"] = opts
	}
	if note != nil {
		l["note"] = note
	}
	return l
}

type lineView struct {
	MenuID    string  `json:"menuId"`
	Station   string  `json:"station"`
	Quantity  int     `json:"quantity"`
	UnitPrice int64   `json:"unitPrice"`
	LineTotal int64   `json:"lineTotal"`
	Note      *string `json:"note"`
	Options   []struct {
		GroupID, OptionID, Name string
		Price                   int64
	} `json:"options"`
}

type ticketView struct {
	OrderID  int64      `json:"orderId"`
	Status   string     `json:"status"`
	TicketNo int64      `json:"ticketNo"`
	Bumped   []string   `json:"bumped"`
	Items    []lineView `json:"items"`
}

func (g *guest) tickets(node int) []ticketView {
	g.s.t.Helper()
	r := g.s.do(node, "GET", "/api/guest/sessions/"+g.sess.ID+"/orders", map[string]string{"X-Session-PIN": g.sess.PIN}, nil)
	var out struct{ Orders []ticketView }
	r.json(g.s.t, &out)
	return out.Orders
}

// orderPast places an order with one key, retried while a window refuses
// it (409 SESSION_ORDER_IN_PROGRESS, 429 COOLDOWN_ACTIVE: the guest app
// waits Retry-After and resends the same key), so a loaded machine's
// timing cannot turn a test of the fingerprint into one of the windows.
func (g *guest) orderPast(node int, key string, body any) resp {
	g.s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := g.order(node, key, body)
		if r.Status != 409 && r.Status != 429 || r.reason(g.s.t) != "SESSION_ORDER_IN_PROGRESS" && r.reason(g.s.t) != "COOLDOWN_ACTIVE" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func field(t *testing.T, r resp) string {
	t.Helper()
	var b struct{ Field string }
	r.json(t, &b)
	return b.Field
}

// TestOptionsAndNotesDecisionTable: the decision rows options and notes
// add (API.md "Menu: options, notes"): bad choices and notes are 400
// INVALID_ORDER naming the line and group, with nothing written; options
// are priced; options and the note are part of the fingerprint; a
// confirmed repeat still goes through.
func TestOptionsAndNotesDecisionTable(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	s.seedLinesMenu()
	firm := map[string][]string{"firmness": {"firm"}}

	t.Run("bad choices and notes", func(t *testing.T) {
		g := s.guest(s.openSession("L1"))
		// Every node reads up to the new menu first (a guest read is a
		// consistent one): these rows are the settled menu's. A node that
		// judges with the menu of a moment ago leaves the options to
		// Apply, whose field is renumbered to the guest's line
		// (TestGuestLineFieldNamesTheLineAsSent).
		for n := range 3 {
			g.history(n, "")
		}
		for i, c := range []struct {
			body  any
			field string
		}{
			{cart(ramenLine(1, nil, nil)), "items[0].options.firmness"},
			{cart(line("tea", 1), ramenLine(1, map[string][]string{"firmness": {}}, nil)), "items[1].options.firmness"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"firm", "soft"}}, nil)), "items[0].options.firmness"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"crunchy"}}, nil)), "items[0].options.firmness"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"firm"}, "sauce": {"mayo"}}, nil)), "items[0].options.sauce"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"firm"}, "extras": {"garlic", "spicy", "chashu"}}, nil)), "items[0].options.extras"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"firm", "firm"}}, nil)), "items[0].options.firmness"},
			{cart(ramenLine(1, map[string][]string{"firmness": {"bad id"}}, nil)), "items[0].options.firmness"},
			{cart(line("tea", 1), ramenLine(1, firm, "ネギ\n抜き")), "items[1].note"},
			{cart(ramenLine(1, firm, "ネギ\u0007")), "items[0].note"},
			{cart(ramenLine(1, firm, strings.Repeat("あ", 141))), "items[0].note"},
			{cart(map[string]any{"menuId": "tea", "quantity": 1, "options": map[string][]string{"firmness": {"firm"}}}), "items[0].options.firmness"},
		} {
			r := g.order(i%3, newKey(), c.body)
			if r.Status != 400 || r.reason(t) != "INVALID_ORDER" || field(t, r) != c.field {
				t.Errorf("case %d: %d %s, want 400 INVALID_ORDER field %s", i, r.Status, r.Body, c.field)
			}
		}
		// A note of exactly 140 characters and a note of null are fine.
		if r := g.order(0, newKey(), cart(ramenLine(1, firm, strings.Repeat("あ", 140)), map[string]any{"menuId": "tea", "quantity": 1, "note": nil})); r.Status != 200 {
			t.Errorf("140-character note: %d %s", r.Status, r.Body)
		}
		if n := len(g.tickets(1)); n != 1 {
			t.Errorf("%d orders written, want only the good one", n)
		}
	})

	t.Run("price with options", func(t *testing.T) {
		g := s.guest(s.openSession("L2"))
		b := cart(ramenLine(2, map[string][]string{"firmness": {"firm"}, "extras": {"spicy", "garlic"}}, "ネギ抜き"), line("beer", 1))
		b["expectedTotal"] = (900+50+100)*2 + 600
		r := g.order(1, newKey(), b)
		var ok success
		r.json(t, &ok)
		if r.Status != 200 || ok.TotalPrice != 2700 {
			t.Fatalf("order: %d %s", r.Status, r.Body)
		}
		b["expectedTotal"] = 1800           // without the options
		b["allowRepeat"] = true             // not a payload replay (row 11 comes first)
		time.Sleep(1100 * time.Millisecond) // past the burst window
		if r := s.guest(g.sess).orderPast(2, newKey(), b); r.Status != 400 || r.reason(t) != "PRICE_MISMATCH" {
			t.Errorf("total without options: %d %s", r.Status, r.Body)
		}
		h := g.tickets(0)
		if len(h) != 1 {
			t.Fatalf("history %+v", h)
		}
		var ramen *lineView
		for i := range h[0].Items {
			if h[0].Items[i].MenuID == "ramen" {
				ramen = &h[0].Items[i]
			} else if it := h[0].Items[i]; it.Station != "drinks" || it.Note != nil || len(it.Options) != 0 {
				t.Errorf("beer line %+v", it)
			}
		}
		if ramen == nil || ramen.Station != "noodles" || ramen.UnitPrice != 1050 || ramen.LineTotal != 2100 || ramen.Note == nil || *ramen.Note != "ネギ抜き" ||
			len(ramen.Options) != 3 || ramen.Options[0].OptionID != "firm" || ramen.Options[0].Name != "かため" ||
			ramen.Options[1].OptionID != "garlic" || ramen.Options[1].Price != 50 || ramen.Options[2].OptionID != "spicy" {
			t.Errorf("ramen line %+v", ramen)
		}
	})

	t.Run("fingerprint: note differs, same, allowRepeat", func(t *testing.T) {
		sess := s.openSession("L3")
		a, b, c, d := s.guest(sess), s.guest(sess), s.guest(sess), s.guest(sess)
		k1 := newKey()
		var o1, o2, o3, o4 success
		a.order(0, k1, cart(ramenLine(1, firm, "ネギ抜き"))).json(t, &o1)
		// The same key with another note is another payload.
		if r := a.order(1, k1, cart(ramenLine(1, firm, "ネギ多め"))); r.Status != 422 || r.reason(t) != "IDEMPOTENCY_KEY_REUSED" {
			t.Errorf("same key, other note: %d %s", r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond) // past the burst window
		// The same cart and note tapped again (new key, option ids in
		// another order, surrounding spaces): the same order.
		r := b.orderPast(1, newKey(), cart(ramenLine(1, map[string][]string{"firmness": {"firm"}, "extras": {}}, " ネギ抜き ")))
		r.json(t, &o2)
		if r.Status != 200 || !o2.IdempotentReplay || o2.OrderID != o1.OrderID {
			t.Errorf("same note: %d %s, want a replay of %d", r.Status, r.Body, o1.OrderID)
		}
		// Another note: another order.
		r = c.orderPast(2, newKey(), cart(ramenLine(1, firm, "ネギ多め")))
		r.json(t, &o3)
		if r.Status != 200 || o3.IdempotentReplay || o3.OrderID == o1.OrderID {
			t.Errorf("other note: %d %s, want a new order", r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond)
		// Another firmness: another order too.
		rep := cart(ramenLine(1, map[string][]string{"firmness": {"soft"}}, "ネギ多め"))
		if r := d.orderPast(0, newKey(), rep); r.Status != 200 || strings.Contains(string(r.Body), `"idempotentReplay":true`) {
			t.Errorf("other option: %d %s", r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond)
		// A confirmed repeat of the first cart is a new order.
		again := cart(ramenLine(1, firm, "ネギ抜き"))
		again["allowRepeat"] = true
		r = s.guest(sess).orderPast(1, newKey(), again)
		r.json(t, &o4)
		if r.Status != 200 || o4.IdempotentReplay || o4.OrderID == o1.OrderID {
			t.Errorf("allowRepeat: %d %s", r.Status, r.Body)
		}
		if n := len(a.tickets(2)); n != 4 {
			t.Errorf("%d orders, want 4", n)
		}
	})
}

// TestMenuOptionGroupsValidation: a bad option group or station is 400
// INVALID_MENU_ITEM naming the field, and nothing is written.
func TestMenuOptionGroupsValidation(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	s.seedLinesMenu()
	opt := func(id string, price any) map[string]any {
		return map[string]any{"optionId": id, "name": "x", "price": price}
	}
	group := func(id string, min, max int, opts ...map[string]any) map[string]any {
		return map[string]any{"groupId": id, "name": "g", "min": min, "max": max, "options": opts}
	}
	var nine []map[string]any
	for i := 0; i < 9; i++ {
		nine = append(nine, group(fmt.Sprint("g", i), 0, 1, opt("a", 0)))
	}
	var seventeen []map[string]any
	for i := 0; i < 17; i++ {
		seventeen = append(seventeen, opt(fmt.Sprint("o", i), 0))
	}
	for i, c := range []struct {
		extra map[string]any
		field string
	}{
		{map[string]any{"station": "noodle bar"}, "station"},
		{map[string]any{"station": strings.Repeat("s", 33)}, "station"},
		{map[string]any{"optionGroups": nine}, "optionGroups"},
		{map[string]any{"optionGroups": []any{group("g", 0, 1, seventeen...)}}, "optionGroups[0].options"},
		{map[string]any{"optionGroups": []any{group("g", 2, 1, opt("a", 0), opt("b", 0))}}, "optionGroups[0].min"},
		{map[string]any{"optionGroups": []any{group("g", -1, 1, opt("a", 0))}}, "optionGroups[0].min"},
		{map[string]any{"optionGroups": []any{group("g", 2, 2, opt("a", 0))}}, "optionGroups[0].min"},
		{map[string]any{"optionGroups": []any{group("g", 0, 1, opt("a", 0), opt("a", 0))}}, "optionGroups[0].options[1].optionId"},
		{map[string]any{"optionGroups": []any{group("g", 0, 1, opt("a", -5))}}, "optionGroups[0].options[0].price"},
		{map[string]any{"optionGroups": []any{group("g", 0, 1, opt("a", nil))}}, "optionGroups[0].options[0].price"},
		{map[string]any{"optionGroups": []any{group("g", 0, 1, opt("a", 0)), group("g", 0, 1, opt("b", 0))}}, "optionGroups[1].groupId"},
		{map[string]any{"optionGroups": []any{group("bad id", 0, 1, opt("a", 0))}}, "optionGroups[0].groupId"},
	} {
		body := map[string]any{"name": "塩ラーメン", "price": 850}
		for k, v := range c.extra {
			body[k] = v
		}
		r := s.staff(0, "PUT", "/api/staff/menu/shio", body)
		if r.Status != 400 || r.reason(t) != "INVALID_MENU_ITEM" || field(t, r) != c.field {
			t.Errorf("case %d: %d %s, want field %s", i, r.Status, r.Body, c.field)
		}
	}
	var menu struct {
		Items []struct {
			MenuID, Station string
			OptionGroups    []struct {
				GroupID  string
				Min, Max int
			}
		}
	}
	s.mustStaff(0, "GET", "/api/staff/menu", nil).json(t, &menu)
	stations := map[string]string{}
	for _, it := range menu.Items {
		stations[it.MenuID] = it.Station
		if it.MenuID == "shio" {
			t.Errorf("a rejected item was written")
		}
		if it.MenuID == "ramen" && (len(it.OptionGroups) != 2 || it.OptionGroups[0].GroupID != "firmness" || it.OptionGroups[0].Min != 1) {
			t.Errorf("ramen groups %+v", it.OptionGroups)
		}
	}
	if stations["ramen"] != "noodles" || stations["beer"] != "drinks" || stations["tea"] != "kitchen" {
		t.Errorf("stations %v", stations)
	}
}

// TestStationsAndBump: the kitchen list narrows to a station's lines; an
// order is READY when every station in it has bumped; a recall puts it
// back on every station; bad bumps are refused.
func TestStationsAndBump(t *testing.T) {
	s := startStore(t, 3, withKitchenPassword(t))
	s.seedMenu()
	s.seedLinesMenu()
	g := s.guest(s.openSession("B1"))
	var placed success
	g.order(0, newKey(), cart(ramenLine(1, map[string][]string{"firmness": {"firm"}}, "ネギ抜き"), line("beer", 2))).json(t, &placed)
	if placed.OrderID == 0 {
		t.Fatal("no order")
	}
	kitchen := func(node int, query string) []ticketView {
		var out struct{ Orders []ticketView }
		s.mustStaff(node, "GET", "/api/kitchen/orders"+query, nil).json(t, &out)
		return out.Orders
	}
	noodles := kitchen(1, "?station=noodles")
	if len(noodles) != 1 || len(noodles[0].Items) != 1 || noodles[0].Items[0].MenuID != "ramen" || *noodles[0].Items[0].Note != "ネギ抜き" {
		t.Fatalf("noodle station: %+v", noodles)
	}
	drinks := kitchen(2, "?station=drinks")
	if len(drinks) != 1 || len(drinks[0].Items) != 1 || drinks[0].Items[0].MenuID != "beer" {
		t.Fatalf("drinks station: %+v", drinks)
	}
	if l := kitchen(0, "?station=grill"); len(l) != 0 {
		t.Errorf("a station with no lines sees %+v", l)
	}
	if all := kitchen(0, ""); len(all) != 1 || len(all[0].Items) != 2 {
		t.Errorf("the whole kitchen: %+v", all)
	}
	bump := func(node int, station string) resp {
		return s.staff(node, "POST", fmt.Sprintf("/api/kitchen/orders/%d/bump", placed.OrderID), map[string]string{"station": station})
	}
	for _, c := range []struct {
		station, reason, field string
		status                 int
	}{{"bad station", "INVALID_REQUEST", "station", 400}, {"grill", "INVALID_REQUEST", "station", 400}} {
		if r := bump(0, c.station); r.Status != c.status || r.reason(t) != c.reason || field(t, r) != c.field {
			t.Errorf("bump %q: %d %s", c.station, r.Status, r.Body)
		}
	}
	if r := s.staff(0, "POST", "/api/kitchen/orders/99999/bump", map[string]string{"station": "noodles"}); r.Status != 404 || r.reason(t) != "ORDER_NOT_FOUND" {
		t.Errorf("unknown order: %d %s", r.Status, r.Body)
	}
	var o ticketView
	bump(1, "noodles").json(t, &o)
	if o.Status != "ACCEPTED" || len(o.Bumped) != 1 {
		t.Errorf("after the noodle bump: %+v", o)
	}
	bump(2, "noodles").json(t, &o) // again: nothing changes
	if o.Status != "ACCEPTED" || len(o.Bumped) != 1 {
		t.Errorf("after a second noodle bump: %+v", o)
	}
	// The drinks station's screen is a kitchen tablet: its token may bump.
	kt := kitchenLogin(t, s, 0)
	s.do(0, "POST", fmt.Sprintf("/api/kitchen/orders/%d/bump", placed.OrderID), map[string]string{"Authorization": "Bearer " + kt},
		map[string]string{"station": "drinks"}).json(t, &o)
	if o.Status != "READY" || len(o.Bumped) != 2 {
		t.Errorf("after both bumps: %+v", o)
	}
	if h := g.tickets(2); len(h) != 1 || h[0].Status != "READY" {
		t.Errorf("guest history after both bumps: %+v", h)
	}
	// A recall puts it back on every station's screen, un-bumped.
	s.mustStaff(1, "PATCH", fmt.Sprintf("/api/staff/orders/%d", placed.OrderID), map[string]string{"status": "COOKING"}).json(t, &o)
	if o.Status != "COOKING" || len(o.Bumped) != 0 {
		t.Errorf("after a recall: %+v", o)
	}
	// The order-level flow works beside bumps.
	s.mustStaff(2, "PATCH", fmt.Sprintf("/api/staff/orders/%d", placed.OrderID), map[string]string{"status": "SERVED"})
	if r := bump(0, "drinks"); r.Status != 409 || r.reason(t) != "INVALID_TRANSITION" {
		t.Errorf("bump of a served order: %d %s", r.Status, r.Body)
	}
}

// TestStationStream: ?station= on the stream narrows the snapshot and
// the live events to the station's lines.
func TestStationStream(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	s.seedLinesMenu()
	g := s.guest(s.openSession("S1"))
	if r := g.order(0, newKey(), cart(line("beer", 1))); r.Status != 200 {
		t.Fatalf("beer: %d %s", r.Status, r.Body)
	}
	req, _ := http.NewRequest("GET", s.url(0)+"/api/kitchen/stream?station=noodles", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := apitest.Client(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan [2]string, 16)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var typ string
		for sc.Scan() {
			l := sc.Text()
			if v, ok := strings.CutPrefix(l, "event: "); ok {
				typ = v
			} else if v, ok := strings.CutPrefix(l, "data: "); ok && typ != "ping" {
				events <- [2]string{typ, v}
			}
		}
		close(events)
	}()
	next := func() (string, map[string]any) {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			var m map[string]any
			json.Unmarshal([]byte(e[1]), &m)
			return e[0], m
		case <-time.After(30 * time.Second):
			t.Fatal("no event")
		}
		return "", nil
	}
	if typ, m := next(); typ != "snapshot" || len(m["orders"].([]any)) != 0 {
		t.Fatalf("snapshot for noodles: %s %v", typ, m)
	}
	time.Sleep(1100 * time.Millisecond) // past the burst window
	if r := s.guest(g.sess).orderPast(0, newKey(), cart(line("beer", 2))); r.Status != 200 {
		t.Fatalf("second beer: %d %s", r.Status, r.Body)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := s.guest(g.sess).orderPast(0, newKey(), cart(ramenLine(1, map[string][]string{"firmness": {"soft"}}, nil), line("beer", 1))); r.Status != 200 {
		t.Fatalf("ramen and beer: %d %s", r.Status, r.Body)
	}
	// The beer-only order never reaches the noodle screen: the next event
	// is the ramen order, with its ramen line only.
	typ, m := next()
	items, _ := m["order"].(map[string]any)["items"].([]any)
	if typ != "order.created" || len(items) != 1 || items[0].(map[string]any)["menuId"] != "ramen" {
		t.Fatalf("noodle event: %s %v", typ, m)
	}
	if r := s.staff(0, "GET", "/api/kitchen/stream?station=bad%20id", nil); r.Status != 400 {
		t.Errorf("bad station: %d %s", r.Status, r.Body)
	}
}

// TestTicketNumbers: 1, 2, 3 within the business day, on every node the
// same; a day close starts again at 1.
func TestTicketNumbers(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("N1")
	var want int64
	order := func(node int) ticketView {
		t.Helper()
		want++
		id := s.staffOrder(t, node, sess, cart(line("tea", 1)))
		for _, o := range s.guest(sess).tickets((node + 1) % 3) {
			if o.OrderID == id {
				return o
			}
		}
		t.Fatalf("order %d not in the history", id)
		return ticketView{}
	}
	for i := 0; i < 3; i++ {
		if o := order(i); o.TicketNo != want {
			t.Errorf("order %d: ticket %d, want %d", i, o.TicketNo, want)
		}
	}
	s.mustStaff(1, "POST", "/api/staff/days/close?force=true", nil)
	want = 0
	for i := 0; i < 2; i++ {
		if o := order(i + 1); o.TicketNo != want {
			t.Errorf("after the day close, order %d: ticket %d, want %d", i, o.TicketNo, want)
		}
	}
}

// TestOptionNames: option groups and options carry extra languages like
// items (canonical tags, bad ones named by field, nothing written), and
// both menu answers give them back on every node.
func TestOptionNames(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	item := func(groupNames, optNames map[string]string) map[string]any {
		return map[string]any{"name": "塩ラーメン", "price": 850, "optionGroups": []any{map[string]any{
			"groupId": "firmness", "name": "麺のかたさ", "nameEn": "Noodle firmness", "names": groupNames, "min": 1, "max": 1,
			"options": []any{
				map[string]any{"optionId": "soft", "name": "やわらかめ", "price": 0},
				map[string]any{"optionId": "firm", "name": "かため", "nameEn": "Firm", "names": optNames, "price": 0},
			}}}}
	}
	for i, c := range []struct {
		group, opt map[string]string
		field      string
	}{
		{map[string]string{"xx-!!": "a"}, nil, "optionGroups[0].names.xx-!!"},
		{map[string]string{"zh-Hans": "a", "zh-hans": "b"}, nil, "optionGroups[0].names.zh-hans"},
		{map[string]string{"ko": "a\nb"}, nil, "optionGroups[0].names.ko"},
		{nil, map[string]string{"ko": strings.Repeat("면", 101)}, "optionGroups[0].options[1].names.ko"},
		{nil, map[string]string{"ko": ""}, "optionGroups[0].options[1].names.ko"},
		{nil, map[string]string{"123": "a"}, "optionGroups[0].options[1].names.123"},
	} {
		r := s.staff(0, "PUT", "/api/staff/menu/shio", item(c.group, c.opt))
		if r.Status != 400 || r.reason(t) != "INVALID_MENU_ITEM" || field(t, r) != c.field {
			t.Errorf("case %d: %d %s, want field %s", i, r.Status, r.Body, c.field)
		}
	}
	if r := s.staff(1, "GET", "/api/staff/menu", nil); strings.Contains(string(r.Body), `"shio"`) {
		t.Fatalf("a rejected item was written: %s", r.Body)
	}
	s.mustStaff(0, "PUT", "/api/staff/menu/shio", item(map[string]string{"zh-hans": "面的硬度", "ko": "면 굵기"}, map[string]string{"zh-Hans": "硬"}))
	type menuView struct {
		Items []struct {
			MenuID       string
			OptionGroups []struct {
				GroupID string
				Names   map[string]string
				Options []struct {
					OptionID string
					Names    map[string]string
				}
			}
		}
	}
	check := func(where string, m menuView) {
		t.Helper()
		for _, it := range m.Items {
			if it.MenuID != "shio" {
				continue
			}
			g := it.OptionGroups[0]
			if len(g.Names) != 2 || g.Names["zh-Hans"] != "面的硬度" || g.Names["ko"] != "면 굵기" ||
				len(g.Options[0].Names) != 0 || len(g.Options[1].Names) != 1 || g.Options[1].Names["zh-Hans"] != "硬" {
				t.Errorf("%s: names %+v", where, g)
			}
			return
		}
		t.Errorf("%s: no shio", where)
	}
	sess := s.openSession("B1")
	for i := 0; i < 3; i++ {
		// a follower may not have applied the write yet: wait for it (bounded)
		var staff, guest menuView
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r := s.mustStaff(i, "GET", "/api/staff/menu", nil)
			if strings.Contains(string(r.Body), `"shio"`) || time.Now().After(deadline) {
				r.json(t, &staff)
				break
			}
		}
		check(fmt.Sprint("staff menu on node ", i), staff)
		r := s.do(i, "GET", "/api/guest/sessions/"+sess.ID+"/menu", map[string]string{"X-Session-PIN": sess.PIN}, nil)
		if r.Status != 200 {
			t.Fatalf("guest menu on node %d: %d %s", i, r.Status, r.Body)
		}
		r.json(t, &guest)
		check(fmt.Sprint("guest menu on node ", i), guest)
	}
}
