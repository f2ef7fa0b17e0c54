package store

import (
	"errors"
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

// TakeStock takes n[i] units of skus[i] (distinct skus) where it is
// tracked, all or nothing, in one statement: an order's stock costs one
// write instead of a read and a write per tracked sku. taken is false when
// a tracked sku has fewer than asked: its CHECK (quantity >= 0) fails the
// statement, which SQLite backs out whole (the ABORT rule), so nothing was
// taken and the caller finds the short skus with StockOf.
func TakeStock(tx DB, skus []string, n []int64) (taken bool, err error) {
	if len(skus) == 0 {
		return true, nil
	}
	// One statement text per cart size, as StockOf. sku = ? OR … finds the
	// rows by the primary key without building a table of the skus, as IN
	// (…) and UPDATE … FROM (VALUES …) do (twice the time, measured).
	var set, where strings.Builder
	args := make([]any, 0, 2*len(skus))
	for i, s := range skus {
		fmt.Fprintf(&set, " WHEN ?%d THEN ?%d", 2*i+1, 2*i+2)
		if i > 0 {
			where.WriteString(" OR ")
		}
		fmt.Fprintf(&where, "sku = ?%d", 2*i+1)
		args = append(args, s, n[i])
	}
	query := `UPDATE stock SET quantity = quantity - CASE sku` + set.String() + ` END WHERE ` + where.String()
	if _, err := tx.Exec(query, args...); err != nil {
		if isConstraint(err) {
			return false, nil
		}
		return false, fmt.Errorf("take stock: %w", err)
	}
	return true, nil
}

// isConstraint reports an SQLITE_CONSTRAINT failure (any extended code).
func isConstraint(err error) bool {
	const sqliteConstraint = 19
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteConstraint
}
