package orders

import (
	"errors"
	"net/http"

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

func applySetOrderStatus(ctx *raftfsm.ApplyContext, tx *kv.Tx, c setOrderStatusCmd) ([]byte, error) {
	o, found, err := store.GetOrder(ctx.DB, c.OrderID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "ORDER_NOT_FOUND")
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
			return reject(http.StatusGone, "SESSION_CLOSED")
		}
	}
	if !validTransition(o.Status, c.Status) {
		return reject(http.StatusConflict, "INVALID_TRANSITION")
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
