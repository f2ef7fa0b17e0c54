package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const orderCols = `order_id, seq, session_id, table_id, status, items, total_price, created_at, updated_at, request_id, client_id, source`

func scanOrder(sc rowScanner) (Order, error) {
	var o Order
	var items string
	var created, updated int64
	var req, client sql.NullString
	var bumped string
	if err := sc.Scan(&o.OrderID, &o.Seq, &o.SessionID, &o.TableID, &o.Status, &items, &o.TotalPrice, &created, &updated, &req, &client, &o.Source,
		&o.TicketNo, &bumped); err != nil {
		return o, err
	}
	if err := json.Unmarshal([]byte(items), &o.Items); err != nil {
		return o, fmt.Errorf("order %d items: %w", o.OrderID, err)
	}
	if err := withLineDefaults(&o, bumped); err != nil {
		return o, err
	}
	o.CreatedAt, o.UpdatedAt = FormatTime(created), FormatTime(updated)
	if req.Valid {
		r := req.String
		o.RequestID = &r
	}
	o.ClientID = client.String
	return o, nil
}

// AddOrder stores a new order under o.OrderID, which the caller has
// found free, live and archived (Apply's admission memory keeps every id
// in use): a plain INSERT whose result nothing needs, so an Apply queues
// it with the order's other rows (queue.go) and a group's orders are
// written by a few multi-row statements at its commit. A taken id fails
// that statement, and the batch with it, as any failed write does.
// createdAt is the leader's wall clock; r is what a resend replays it by
// (the zero OrderReplay for none, replay.go).
func AddOrder(tx DB, o Order, createdAt int64, r OrderReplay) error {
	items, err := json.Marshal(o.Items)
	if err != nil {
		return fmt.Errorf("encode order items: %w", err)
	}
	var req, client any
	if o.RequestID != nil {
		req = *o.RequestID
	}
	if o.ClientID != "" {
		client = o.ClientID
	}
	var fp, attempt any
	if r != (OrderReplay{}) {
		fp, attempt = r.Fingerprint, r.Attempt
	}
	if err := orderInsert.insert(tx, o.OrderID, o.Seq, o.SessionID, o.TableID, o.Status, string(items), o.TotalPrice, createdAt, createdAt, req, client, o.Source, o.TicketNo,
		fp, attempt, nullIfZero(r.KeyUntil), nullIfZero(r.CartUntil)); err != nil {
		return fmt.Errorf("insert order %d: %w", o.OrderID, err)
	}
	return nil
}

// GetOrder returns a live (not archived) order.
func GetOrder(q DB, id int64) (Order, bool, error) { return getOrderIn(q, "orders", id) }

// SetOrderStatus changes an order's status.
func SetOrderStatus(tx DB, id int64, status string, at int64) error {
	if _, err := tx.Exec(`UPDATE orders SET status = ?, updated_at = ? WHERE order_id = ?`, status, at, id); err != nil {
		return fmt.Errorf("update order %d: %w", id, err)
	}
	return nil
}

func queryOrders(q DB, query string, args ...any) ([]Order, error) {
	return queryAll(q, "list orders", scanOrder, query, args...)
}

// SessionOrders returns a session's orders, newest first; requestID
// narrows to the order placed with that key.
func SessionOrders(q DB, sessionID string, limit int, requestID string) ([]Order, error) {
	if requestID != "" {
		return queryOrders(q, `SELECT `+orderCols+`, `+orderLineCols+` FROM orders WHERE session_id = ? AND request_id = ? ORDER BY seq DESC LIMIT ?`, sessionID, requestID, limit)
	}
	return queryOrders(q, `SELECT `+orderCols+`, `+orderLineCols+` FROM orders WHERE session_id = ? ORDER BY seq DESC LIMIT ?`, sessionID, limit)
}

// SessionOrdersOldestFirst returns every order of a session in order.
func SessionOrdersOldestFirst(q DB, sessionID string) ([]Order, error) {
	return queryOrders(q, `SELECT `+orderCols+`, `+orderLineCols+` FROM orders WHERE session_id = ? ORDER BY seq`, sessionID)
}

// KitchenOrders returns orders in the given statuses of active sessions,
// oldest first.
func KitchenOrders(q DB, statuses []string) ([]Order, error) {
	if len(statuses) == 0 {
		return []Order{}, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")
	args := make([]any, 0, len(statuses)+1)
	for _, s := range statuses {
		args = append(args, s)
	}
	args = append(args, SessionActive)
	return queryOrders(q, `SELECT `+prefixed("o.", orderCols+", "+orderLineCols)+` FROM orders o JOIN sessions s ON s.session_id = o.session_id
		WHERE o.status IN (`+ph+`) AND s.status = ? ORDER BY o.seq`, args...)
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

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
