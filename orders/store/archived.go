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
	o, err := scanOrder(q.QueryRow(`SELECT `+orderCols+` FROM orders_archive WHERE order_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("get archived order %d: %w", id, err)
	}
	return o, true, nil
}
