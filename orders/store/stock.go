package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// StockMap returns every tracked sku's quantity.
func StockMap(q DB) (map[string]int64, error) {
	rows, err := q.Query(`SELECT sku, quantity FROM stock`)
	if err != nil {
		return nil, fmt.Errorf("read stock: %w", err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var sku string
		var n int64
		if err := rows.Scan(&sku, &n); err != nil {
			return nil, fmt.Errorf("read stock: %w", err)
		}
		m[sku] = n
	}
	return m, rows.Err()
}

// GetStock returns a sku's quantity and whether it is tracked.
func GetStock(q DB, sku string) (int64, bool, error) {
	var n int64
	err := q.QueryRow(`SELECT quantity FROM stock WHERE sku = ?`, sku).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read stock %s: %w", sku, err)
	}
	return n, true, nil
}

// SetStock sets a sku's quantity; nil stops tracking it.
func SetStock(tx DB, sku string, qty *int64) error {
	var err error
	if qty == nil {
		_, err = tx.Exec(`DELETE FROM stock WHERE sku = ?`, sku)
	} else {
		_, err = tx.Exec(`INSERT INTO stock(sku, quantity) VALUES (?,?) ON CONFLICT(sku) DO UPDATE SET quantity=excluded.quantity`, sku, *qty)
	}
	if err != nil {
		return fmt.Errorf("set stock %s: %w", sku, err)
	}
	return nil
}

// AddStock changes a tracked sku by delta (no-op when untracked).
func AddStock(tx DB, sku string, delta int64) error {
	if _, err := tx.Exec(`UPDATE stock SET quantity = quantity + ? WHERE sku = ?`, delta, sku); err != nil {
		return fmt.Errorf("change stock %s by %d: %w", sku, delta, err)
	}
	return nil
}

// SKUExists reports whether sku names a menu item or a topping.
func SKUExists(q DB, sku string) (bool, error) {
	var n int
	err := q.QueryRow(`SELECT EXISTS(SELECT 1 FROM menu_items WHERE menu_id = ?) OR EXISTS(SELECT 1 FROM toppings WHERE topping_id = ?)`, sku, sku).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check sku %s: %w", sku, err)
	}
	return n == 1, nil
}

// ListStock returns every sku (menu ids and topping ids), untracked ones
// with a nil quantity.
func ListStock(q DB) ([]StockLevel, error) {
	return queryAll(q, "list stock", scanStockLevel, `SELECT k.sku, s.quantity FROM (SELECT menu_id AS sku FROM menu_items UNION SELECT topping_id FROM toppings) k
		LEFT JOIN stock s ON s.sku = k.sku ORDER BY k.sku`)
}

func scanStockLevel(sc rowScanner) (StockLevel, error) {
	var l StockLevel
	var qn sql.NullInt64
	if err := sc.Scan(&l.SKU, &qn); err != nil {
		return l, err
	}
	if qn.Valid {
		v := qn.Int64
		l.Quantity = &v
	}
	return l, nil
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
