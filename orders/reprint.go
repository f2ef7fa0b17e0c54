package orders

import (
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// reprintOrder finds the order a reprint names. Version 2 looks in the
// archive too (a ticket lost after the table paid and housekeeping moved
// its orders); version 1 entries, written by builds that answered those
// 404, are replayed as they were decided so every box stays identical.
func reprintOrder(ctx *raftfsm.ApplyContext, id int64) (store.Order, bool, error) {
	if ctx.Version < 2 {
		return store.GetOrder(ctx.DB, id)
	}
	return store.GetOrderOrArchived(ctx.DB, id)
}
