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
