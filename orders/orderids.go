package orders

import "sync"

// maxOrderID is the largest order id (API.md: 1…2³¹−1).
const maxOrderID = 1<<31 - 1

// orderIDs chooses the candidate id a proposer puts in an order's
// command. Apply keeps it unless an order holds it, then walks to the
// next free id (insertOrder), so the choice is only a hint, and any
// choice is deterministic to apply.
//
// The hint is the id after the newest order this box applied, counted on
// past the ones it proposed since: a store's ids then run in sequence,
// and each order's row lands on the orders table's last page, which the
// group commit writes once for the whole group. A random id (as before)
// put every order on a page of its own, read, split and written through
// the WAL and its checkpoint: about a fifth of a node's CPU per order in
// the closed loop (bench/ROUNDS.md, round eleven). The run starts at a
// random id when this box knows no order yet, so two stores that share a
// cloud collection (shops/{shopId}/orders/{orderId}) do not start at the
// same id.
type orderIDs struct {
	mu     sync.Mutex
	next   int64
	random func() int64
}

// candidate is the id to propose, given the newest id this box applied
// (0: none known).
func (o *orderIDs) candidate(applied int64) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case applied > 0 && o.next <= applied:
		o.next = applied + 1
	case o.next == 0:
		o.next = o.random()
	}
	if o.next > maxOrderID {
		o.next = 1
	}
	id := o.next
	o.next++
	return id
}
