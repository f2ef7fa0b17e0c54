package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// sessionView is one session's history as one node returned it.
type sessionView struct {
	orders    []histOrder
	err       error
	truncated bool
}

// verifyResult is what the verification pass found.
type verifyResult struct {
	sessions      int
	ordersPerNode map[string]int
	duplicates    []int64
	lost          []LostOrder
	problems      []string
	unacked       int
}

func (v *verifyResult) settled() bool {
	return len(v.lost) == 0 && len(v.problems) == 0
}

// verify reads every session back from every node, again until it settles
// or verifySettle has passed, and checks the result.
func (r *runner) verify(ctx context.Context) *verifyResult {
	deadline := time.Now().Add(r.verifySettle)
	for {
		v := r.check(r.readAll(ctx))
		if v.settled() || time.Now().After(deadline) || !sleep(ctx, 500*time.Millisecond) {
			return v
		}
	}
}

// readAll reads every session from every node: views[node][table].
func (r *runner) readAll(ctx context.Context) [][]sessionView {
	views := make([][]sessionView, len(r.urls))
	for i := range views {
		views[i] = make([]sessionView, len(r.tables))
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for n := range r.urls {
		for ti := range r.tables {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				views[n][ti] = r.readSession(ctx, n, r.tables[ti])
			})
		}
	}
	wg.Wait()
	return views
}

func (r *runner) readSession(ctx context.Context, node int, t *table) sessionView {
	path := fmt.Sprintf("/api/guest/sessions/%s/orders?limit=%d", url.PathEscape(t.sessionID), historyLimit)
	var last error
	for attempt := range 3 {
		if attempt > 0 && !sleep(ctx, time.Duration(attempt)*300*time.Millisecond) {
			break
		}
		res, err := do(ctx, r.client, r.timeout, http.MethodGet, r.urls[node]+path, r.guestHeader(t, r.verifyClientID), nil, false)
		if err != nil {
			last = err
			continue
		}
		if res.status != http.StatusOK {
			last = fmt.Errorf("%s", res)
			if res.status >= 500 {
				continue
			}
			break
		}
		var h struct {
			Orders []histOrder `json:"orders"`
		}
		if err := json.Unmarshal(res.body, &h); err != nil {
			return sessionView{err: fmt.Errorf("decoding history: %w", err)}
		}
		return sessionView{orders: h.Orders, truncated: len(h.Orders) >= historyLimit}
	}
	if last == nil {
		last = ctx.Err()
	}
	return sessionView{err: last}
}

// check finds duplicates (two orders for one requestId, or for one intended
// order whatever keys it used), acknowledged orders missing on a node, and
// anything else that does not add up.
func (r *runner) check(views [][]sessionView) *verifyResult {
	v := &verifyResult{sessions: len(r.tables), ordersPerNode: map[string]int{}}
	r.mu.Lock()
	intended := slices.Clone(r.intended)
	r.mu.Unlock()

	owner := map[string]*intendedOrder{}
	for _, o := range intended {
		for _, k := range o.keys {
			owner[normKey(k)] = o
		}
	}
	dups := map[int64]bool{}
	problems := map[string]bool{}
	addProblem := func(format string, args ...any) {
		problems[fmt.Sprintf(format, args...)] = true
	}
	ordersOf := map[*intendedOrder]map[int64]bool{} // every order seen for an intended order
	present := make([]map[int64]*histOrder, len(r.urls))
	sessionOf := map[int64]int{} // order id → table index

	unreadable := make([]int, len(r.urls))
	firstErr := make([]error, len(r.urls))
	for n, base := range r.urls {
		present[n] = map[int64]*histOrder{}
		for ti, sv := range views[n] {
			t := r.tables[ti]
			if sv.err != nil {
				if unreadable[n] == 0 {
					firstErr[n] = sv.err
				}
				unreadable[n]++
				continue
			}
			if sv.truncated {
				addProblem("session %s (%s) on %s has %d or more orders: the history cannot show them all, verification is incomplete",
					t.sessionID, t.tableID, base, historyLimit)
			}
			v.ordersPerNode[base] += len(sv.orders)
			byKey := map[string][]int64{}
			for i := range sv.orders {
				ho := &sv.orders[i]
				present[n][ho.OrderID] = ho
				sessionOf[ho.OrderID] = ti
				rid := ho.requestID()
				if rid == "" {
					addProblem("order %d in session %s has no requestId; the bench placed no such order", ho.OrderID, t.tableID)
					continue
				}
				byKey[rid] = append(byKey[rid], ho.OrderID)
				o := owner[rid]
				if o == nil {
					addProblem("order %d in session %s has requestId %s, which the bench never sent", ho.OrderID, t.tableID, rid)
					continue
				}
				if o.table != t {
					addProblem("order %d with requestId %s is in %s, the bench sent it for %s", ho.OrderID, rid, t.tableID, o.table.tableID)
				}
				if ordersOf[o] == nil {
					ordersOf[o] = map[int64]bool{}
				}
				ordersOf[o][ho.OrderID] = true
				if ho.cartKey() != o.cartKey {
					addProblem("order %d on %s does not hold the cart that was ordered (%s, sent %s)", ho.OrderID, base, ho.cartKey(), o.cartKey)
				}
			}
			for _, ids := range byKey {
				if len(ids) > 1 {
					slices.Sort(ids)
					for _, id := range ids[1:] {
						dups[id] = true
					}
				}
			}
		}
	}

	for n, base := range r.urls {
		if unreadable[n] > 0 {
			addProblem("could not read %d of %d sessions from %s, so it is not verified: %v", unreadable[n], len(r.tables), base, firstErr[n])
		}
	}

	acked := map[int64]bool{}
	for _, o := range intended {
		acks := o.ackedIDs()
		all := map[int64]bool{}
		for id := range ordersOf[o] {
			all[id] = true
		}
		for id := range acks {
			all[id] = true
			acked[id] = true
		}
		if len(all) > 1 {
			// One intended order, several orders: keep the first one the
			// guest was told about (or the lowest id), the rest are
			// duplicates.
			keep := int64(-1)
			for id := range acks {
				if keep < 0 || id < keep {
					keep = id
				}
			}
			if keep < 0 {
				for id := range all {
					if keep < 0 || id < keep {
						keep = id
					}
				}
			}
			for id := range all {
				if id != keep {
					dups[id] = true
				}
			}
		}
		if len(acks) == 0 && len(ordersOf[o]) > 0 {
			v.unacked++
		}
		for id, rid := range acks {
			lo := LostOrder{OrderID: id, RequestID: rid, SessionID: o.table.sessionID, TableID: o.table.tableID}
			for n, base := range r.urls {
				if views[n][o.table.idx].err != nil {
					continue // reported as unreadable
				}
				ho := present[n][id]
				if ho == nil {
					lo.MissingOn = append(lo.MissingOn, base)
					continue
				}
				if !slices.Contains(o.keys, ho.requestID()) {
					addProblem("acknowledged order %d has requestId %s on %s, not one of the keys sent for it", id, ho.requestID(), base)
				}
			}
			if len(lo.MissingOn) > 0 {
				v.lost = append(v.lost, lo)
			}
		}
	}

	// An order the guest never heard of must still be on every node.
	for id, ti := range sessionOf {
		if acked[id] {
			continue
		}
		var on, missing []string
		for n, base := range r.urls {
			if views[n][ti].err != nil {
				continue
			}
			if present[n][id] != nil {
				on = append(on, base)
			} else {
				missing = append(missing, base)
			}
		}
		if len(missing) > 0 {
			addProblem("order %d is on %v but not on %v", id, on, missing)
		}
	}

	for id := range dups {
		v.duplicates = append(v.duplicates, id)
	}
	slices.Sort(v.duplicates)
	slices.SortFunc(v.lost, func(a, b LostOrder) int { return cmp.Compare(a.OrderID, b.OrderID) })
	for p := range problems {
		v.problems = append(v.problems, p)
	}
	slices.Sort(v.problems)
	return v
}
