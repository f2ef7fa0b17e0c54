//go:build faults

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"masterorder/api/apitest"
	"masterorder/bench"
)

// ---- orders, stock, menu read through the API ----

type orderLine struct {
	MenuID   string `json:"menuId"`
	Quantity int    `json:"quantity"`
	Toppings []struct {
		ToppingID string `json:"toppingId"`
	} `json:"toppings"`
}

type order struct {
	OrderID   int64       `json:"orderId"`
	SessionID string      `json:"sessionId"`
	TableID   string      `json:"tableId"`
	Status    string      `json:"status"`
	Items     []orderLine `json:"items"`
	RequestID *string     `json:"requestId"`
}

const allStatuses = "ACCEPTED,COOKING,READY,SERVED,CANCELLED"

// state is what one node serves about the store: every order of active
// sessions (all statuses), the stock and the menu, as raw JSON plus the
// decoded orders.
type state struct {
	orders    []order
	rawOrders string
	rawStock  string
	rawMenu   string
	stock     map[string]*int
}

func (c *cluster) readState(id string) (*state, error) {
	var o struct {
		Orders json.RawMessage `json:"orders"`
	}
	if err := c.get(id, "/api/kitchen/orders?status="+allStatuses, &o); err != nil {
		return nil, err
	}
	s := &state{rawOrders: string(o.Orders), stock: map[string]*int{}}
	if err := json.Unmarshal(o.Orders, &s.orders); err != nil {
		return nil, err
	}
	var st struct {
		Stock []struct {
			SKU      string `json:"sku"`
			Quantity *int   `json:"quantity"`
		} `json:"stock"`
	}
	var raw json.RawMessage
	if err := c.get(id, "/api/staff/stock", &raw); err != nil {
		return nil, err
	}
	s.rawStock = string(raw)
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	for _, x := range st.Stock {
		s.stock[x.SKU] = x.Quantity
	}
	if err := c.get(id, "/api/staff/menu", &raw); err != nil {
		return nil, err
	}
	s.rawMenu = string(raw)
	return s, nil
}

// checkState reads every node (converged first) and checks: the same
// orders, stock and menu everywhere; the run's stock equal to initial −
// the non-cancelled quantities ordered in its sessions, never negative;
// every acknowledged order present. It returns the orders of the first
// node.
func (c *cluster) checkState(rep *bench.Report) []order {
	c.t.Helper()
	c.waitConverged(60 * time.Second)
	states := map[string]*state{}
	for _, id := range c.ids {
		s, err := c.readState(id)
		if err != nil {
			c.t.Fatalf("read state: %v", err)
		}
		states[id] = s
	}
	first := states[c.ids[0]]
	for _, id := range c.ids[1:] {
		s := states[id]
		if s.rawOrders != first.rawOrders {
			c.t.Errorf("orders on %s differ from %s (%d vs %d orders)", id, c.ids[0], len(s.orders), len(first.orders))
		}
		if s.rawStock != first.rawStock {
			c.t.Errorf("stock on %s differs from %s:\n%s\n%s", id, c.ids[0], s.rawStock, first.rawStock)
		}
		if s.rawMenu != first.rawMenu {
			c.t.Errorf("menu on %s differs from %s", id, c.ids[0])
		}
	}
	sessions := map[string]bool{}
	for _, sid := range rep.SessionIDs {
		sessions[sid] = true
	}
	if len(rep.InitialStock) == 0 || len(sessions) == 0 {
		c.t.Fatalf("bench report has no initial stock or sessions")
	}
	for _, id := range c.ids {
		s := states[id]
		used := map[string]int{}
		n := 0
		for _, o := range s.orders {
			if !sessions[o.SessionID] || o.Status == "CANCELLED" {
				continue
			}
			n++
			for _, l := range o.Items {
				used[l.MenuID] += l.Quantity
				for _, tp := range l.Toppings {
					used[tp.ToppingID] += l.Quantity
				}
			}
		}
		for sku, initial := range rep.InitialStock {
			q := s.stock[sku]
			if q == nil {
				c.t.Errorf("%s: stock of %s is not tracked any more", id, sku)
				continue
			}
			if *q < 0 {
				c.t.Errorf("%s: stock of %s is negative: %d", id, sku, *q)
			}
			if *q != initial-used[sku] {
				c.t.Errorf("%s: stock of %s is %d, want initial %d − ordered %d = %d", id, sku, *q, initial, used[sku], initial-used[sku])
			}
		}
		if id == c.ids[0] {
			c.t.Logf("stock exact on every node: %d orders of the run, %d skus (e.g. %v)", n, len(rep.InitialStock), used)
		}
	}
	have := map[int64]bool{}
	for _, o := range first.orders {
		have[o.OrderID] = true
	}
	for _, a := range rep.AcknowledgedOrders {
		if !have[a.OrderID] {
			c.t.Errorf("acknowledged order %d (table %s) is not in the kitchen orders", a.OrderID, a.TableID)
		}
	}
	return first.orders
}

// checkReport fails the test when the bench found duplicates, lost orders
// or problems.
func (c *cluster) checkReport(rep *bench.Report) {
	c.t.Helper()
	var sb strings.Builder
	rep.WriteText(&sb)
	c.t.Logf("bench report:\n%s", sb.String())
	if !rep.OK() {
		c.t.Errorf("bench: duplicates=%v lost=%v problems=%v", rep.Duplicates, rep.Lost, rep.Problems)
	}
	if rep.Acknowledged == 0 {
		c.t.Errorf("bench: no order was acknowledged")
	}
}

// ---- kitchen stream ----

// kevent is what the suite compares of one kitchen event.
type kevent struct {
	ID      uint64
	Type    string
	OrderID int64
	Status  string
}

// ksnapshot is a snapshot event: the open orders at index ID.
type ksnapshot struct {
	ID     uint64
	Orders map[int64]string // orderId → status
}

// segment is one SSE connection's worth of events.
type segment struct {
	start  uint64 // the snapshot id, or the Last-Event-ID resumed from
	snap   *ksnapshot
	events []kevent
}

// streamWatcher keeps an SSE connection to one node's kitchen stream,
// reconnecting with the last event id whenever it drops.
type streamWatcher struct {
	c    *cluster
	id   string
	mu   sync.Mutex
	segs []*segment
	last uint64
	errs []string
}

func (c *cluster) watchStreams(ctx context.Context) map[string]*streamWatcher {
	ws := map[string]*streamWatcher{}
	for _, id := range c.ids {
		w := &streamWatcher{c: c, id: id}
		ws[id] = w
		go w.run(ctx)
	}
	return ws
}

func (w *streamWatcher) run(ctx context.Context) {
	client := apitest.Client(w.c.t, &http.Client{Transport: &http.Transport{Proxy: nil}})
	for ctx.Err() == nil {
		w.connect(ctx, client)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *streamWatcher) connect(ctx context.Context, client *http.Client) {
	w.mu.Lock()
	resume := w.last
	resuming := len(w.segs) > 0
	w.mu.Unlock()
	u := w.c.nodes[w.id].httpURL + "/api/kitchen/stream?token=" + w.c.token
	if resuming {
		u += "&lastEventId=" + strconv.FormatUint(resume, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	seg := &segment{start: resume}
	w.mu.Lock()
	w.segs = append(w.segs, seg)
	w.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var id uint64
	var typ, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if typ != "" {
				w.handle(seg, id, typ, data)
			}
			id, typ, data = 0, "", ""
		case strings.HasPrefix(line, "id: "):
			id, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}

func (w *streamWatcher) handle(seg *segment, id uint64, typ, data string) {
	if typ == "ping" {
		return // liveness only: no id, not part of the ordered stream
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if typ == "snapshot" {
		var s struct {
			Orders []order `json:"orders"`
		}
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			w.errs = append(w.errs, fmt.Sprintf("snapshot %d: %v", id, err))
			return
		}
		snap := &ksnapshot{ID: id, Orders: map[int64]string{}}
		for _, o := range s.Orders {
			snap.Orders[o.OrderID] = o.Status
		}
		if seg.snap != nil || len(seg.events) > 0 {
			w.errs = append(w.errs, fmt.Sprintf("snapshot %d in the middle of a connection", id))
		}
		seg.snap, seg.start = snap, id
		w.last = id
		return
	}
	prev := seg.start
	if n := len(seg.events); n > 0 {
		prev = seg.events[n-1].ID
	}
	if id <= prev {
		w.errs = append(w.errs, fmt.Sprintf("event %d (%s) after %d: ids must increase", id, typ, prev))
	}
	ev := kevent{ID: id, Type: typ}
	if strings.HasPrefix(typ, "order.") {
		var d struct {
			Order order `json:"order"`
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			w.errs = append(w.errs, fmt.Sprintf("event %d: %v", id, err))
		}
		ev.OrderID, ev.Status = d.Order.OrderID, d.Order.Status
	}
	seg.events = append(seg.events, ev)
	w.last = id
}

func (w *streamWatcher) lastID() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// checkStreams compares what the kitchen streams of every node sent: no id
// with two different events; no gap inside one connection (an event some
// node sent with an id between two ids this connection sent); from the
// newest snapshot on, the same events on every node; snapshots that agree
// with the events; and every node's final view (its last snapshot plus the
// events after it) equal to its kitchen orders.
func (c *cluster) checkStreams(ws map[string]*streamWatcher, finalOrders []order, rep *bench.Report) {
	c.t.Helper()
	// Wait until every stream has caught up with the same last id.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ids := map[uint64]bool{}
		for _, w := range ws {
			ids[w.lastID()] = true
		}
		if len(ids) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	union := map[uint64]kevent{}
	var maxSnap uint64
	total := 0
	for _, id := range c.ids {
		w := ws[id]
		w.mu.Lock()
		for _, e := range w.errs {
			c.t.Errorf("kitchen stream of %s: %s", id, e)
		}
		for _, s := range w.segs {
			if s.snap != nil {
				maxSnap = max(maxSnap, s.snap.ID)
			}
			for _, e := range s.events {
				total++
				if u, ok := union[e.ID]; ok && u != e {
					c.t.Errorf("kitchen stream: event %d is %+v on %s but %+v elsewhere", e.ID, e, id, u)
				}
				union[e.ID] = e
			}
		}
		w.mu.Unlock()
	}
	ids := make([]uint64, 0, len(union))
	for i := range union {
		ids = append(ids, i)
	}
	slices.Sort(ids)
	createdAt := map[int64]uint64{}
	updated := map[int64]bool{} // orders whose status changed: snapshots may omit them
	for _, i := range ids {
		switch e := union[i]; e.Type {
		case "order.created":
			createdAt[e.OrderID] = i
		case "order.updated":
			updated[e.OrderID] = true
		}
	}
	reconnects := map[string]int{}
	for _, id := range c.ids {
		w := ws[id]
		w.mu.Lock()
		segs := slices.Clone(w.segs)
		w.mu.Unlock()
		reconnects[id] = len(segs) - 1
		for si, s := range segs {
			got := map[uint64]bool{}
			for _, e := range s.events {
				got[e.ID] = true
			}
			end := s.start
			if len(s.events) > 0 {
				end = s.events[len(s.events)-1].ID
			}
			if si == len(segs)-1 && len(ids) > 0 {
				end = max(end, ids[len(ids)-1])
			}
			for _, i := range ids {
				if i > s.start && i <= end && !got[i] {
					c.t.Errorf("kitchen stream of %s, connection %d (from %d): missing event %d %+v", id, si, s.start, i, union[i])
				}
			}
			if s.snap != nil {
				for oid := range s.snap.Orders {
					if at, ok := createdAt[oid]; ok && at > s.snap.ID {
						c.t.Errorf("kitchen stream of %s: snapshot %d holds order %d created at %d", id, s.snap.ID, oid, at)
					}
				}
				for oid, at := range createdAt {
					if at <= s.snap.ID && s.snap.Orders[oid] == "" && !updated[oid] {
						c.t.Errorf("kitchen stream of %s: snapshot %d lacks order %d created at %d", id, s.snap.ID, oid, at)
					}
				}
			}
		}
		// The final view: last snapshot (or the first connection's start
		// snapshot) plus every event after it.
		view := map[int64]string{}
		lastSnap := -1
		for si, s := range segs {
			if s.snap != nil {
				lastSnap = si
			}
		}
		if lastSnap < 0 {
			c.t.Errorf("kitchen stream of %s: no snapshot at all", id)
			continue
		}
		for oid, st := range segs[lastSnap].snap.Orders {
			view[oid] = st
		}
		for _, s := range segs[lastSnap:] {
			for _, e := range s.events {
				if e.Type == "order.created" || e.Type == "order.updated" {
					view[e.OrderID] = e.Status
				}
			}
		}
		want := map[int64]string{}
		for _, o := range finalOrders {
			if o.Status != "SERVED" && o.Status != "CANCELLED" {
				want[o.OrderID] = o.Status
			}
		}
		for oid, st := range view {
			if st == "SERVED" || st == "CANCELLED" {
				delete(view, oid)
			}
		}
		if !reflect.DeepEqual(view, want) {
			c.t.Errorf("kitchen stream of %s: final view has %d open orders, the kitchen orders %d", id, len(view), len(want))
		}
		for _, a := range rep.AcknowledgedOrders {
			if view[a.OrderID] == "" {
				c.t.Errorf("kitchen stream of %s: acknowledged order %d never shown", id, a.OrderID)
				break
			}
		}
	}
	c.t.Logf("kitchen streams agree: %d events received in all (%d distinct ids, newest snapshot %d), reconnects %v", total, len(ids), maxSnap, reconnects)
}
