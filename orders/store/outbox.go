package store

import "fmt"

// The outbox (cloud sync): a row per order change, pushed by the leader
// and deleted once synced.

// Outbox ops.
const (
	OutboxUpsert = "upsert"
	OutboxDelete = "delete"
)

// OutboxRow is one pending cloud change.
type OutboxRow struct {
	Seq     int64
	OrderID int64
	Op      string
}

// InsertOutbox records that an order changed (inside Apply, the row is
// queued: queue.go).
func InsertOutbox(tx DB, orderID int64, op string) error {
	if err := outboxInsert.insert(tx, orderID, op); err != nil {
		return fmt.Errorf("insert outbox row: %w", err)
	}
	return nil
}

// PendingOutbox returns the oldest pending rows.
func PendingOutbox(q DB, limit int) ([]OutboxRow, error) {
	rows, err := q.Query(`SELECT seq, order_id, op FROM outbox ORDER BY seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxRow
	for rows.Next() {
		var r OutboxRow
		if err := rows.Scan(&r.Seq, &r.OrderID, &r.Op); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountOutbox counts pending rows.
func CountOutbox(q DB) (int64, error) {
	var n int64
	if err := q.QueryRow(`SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// DeleteOutbox removes synced rows.
func DeleteOutbox(tx DB, seqs []int64) error {
	for _, s := range seqs {
		if _, err := tx.Exec(`DELETE FROM outbox WHERE seq = ?`, s); err != nil {
			return fmt.Errorf("delete outbox row %d: %w", s, err)
		}
	}
	return nil
}

// QueueActiveOrders adds an upsert row for every order of an active
// session, oldest first: what the cloud must show when sync is switched
// on (the orders taken before then left no row it will read).
func QueueActiveOrders(tx DB) error {
	if _, err := tx.Exec(`INSERT INTO outbox(order_id, op) SELECT o.order_id, ? FROM orders o JOIN sessions s ON s.session_id = o.session_id
		WHERE s.status = ? ORDER BY o.seq`, OutboxUpsert, SessionActive); err != nil {
		return fmt.Errorf("queue active orders: %w", err)
	}
	return nil
}
