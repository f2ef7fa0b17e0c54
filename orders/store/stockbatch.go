package store

import (
	"fmt"
	"strings"
)

// StockOf reads the quantities of the tracked skus among skus in one
// statement (an untracked sku is absent from the map): an order's stock
// check costs one query instead of one per sku.
func StockOf(q DB, skus []string) (map[string]int64, error) {
	out := make(map[string]int64, len(skus))
	if len(skus) == 0 {
		return out, nil
	}
	// One statement text per cart size (1..50 distinct skus and toppings):
	// each is prepared once and cached.
	query := `SELECT sku, quantity FROM stock WHERE sku IN (?` + strings.Repeat(`,?`, len(skus)-1) + `)`
	args := make([]any, len(skus))
	for i, s := range skus {
		args[i] = s
	}
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("read stock: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sku string
		var n int64
		if err := rows.Scan(&sku, &n); err != nil {
			return nil, fmt.Errorf("read stock: %w", err)
		}
		out[sku] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stock: %w", err)
	}
	return out, nil
}

// stockLevelSet is what QueueStockLevel runs when it cannot queue, the
// text raftfsm's QueueSet writes for it (one prepared statement).
const stockLevelSet = `UPDATE stock SET quantity = ? WHERE sku = ?`

// QueueStockLevel sets a tracked sku's quantity to qty, the level the
// caller judged from its memory of the files (orders' admission state):
// on the apply transaction it is queued, and only the newest level per
// sku is written, before any statement that names stock and at the
// group's commit (raftfsm/bulk.go), so many orders of one group cost one
// UPDATE per sku; on any other DB it is written at once. An untracked sku
// (no row) stays untracked.
func QueueStockLevel(tx DB, sku string, qty int64) error {
	if qty < 0 {
		return fmt.Errorf("set stock %s to %d: below zero", sku, qty)
	}
	var err error
	if q, ok := tx.(setQueuer); ok {
		err = q.QueueSet("stock", "sku", "quantity", sku, qty)
	} else {
		_, err = tx.Exec(stockLevelSet, qty, sku)
	}
	if err != nil {
		return fmt.Errorf("set stock %s: %w", sku, err)
	}
	return nil
}
