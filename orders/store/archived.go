package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// GetOrderOrArchived returns an order from the live table or, once its
// session was closed and housekeeping moved it, from the archive: a
// reprint of yesterday's ticket must still find it.
func GetOrderOrArchived(q DB, id int64) (Order, bool, error) {
	if o, found, err := GetOrder(q, id); found || err != nil {
		return o, found, err
	}
	return getOrderIn(q, "orders_archive", id)
}

// getOrderIn reads one order from table (orders or orders_archive, which
// share orderCols).
func getOrderIn(q DB, table string, id int64) (Order, bool, error) {
	o, err := scanOrder(q.QueryRow(`SELECT `+orderCols+`, `+orderLineCols+` FROM `+table+` WHERE order_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("get order %d from %s: %w", id, table, err)
	}
	return o, true, nil
}
