package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// ListMenu returns every item in display order, with toppings and sold-out
// marks (unavailable, or tracked stock at zero).
func ListMenu(q DB) ([]MenuItem, error) {
	stock, err := StockMap(q)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(`SELECT menu_id, name, name_en, category, price, available, sort_order FROM menu_items ORDER BY sort_order, menu_id`)
	if err != nil {
		return nil, fmt.Errorf("list menu: %w", err)
	}
	var items []MenuItem
	idx := map[string]int{}
	for rows.Next() {
		var m MenuItem
		if err := rows.Scan(&m.MenuID, &m.Name, &m.NameEn, &m.Category, &m.Price, &m.Available, &m.SortOrder); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list menu: %w", err)
		}
		m.Toppings = []Topping{}
		m.SoldOut = soldOut(m.Available, stock, m.MenuID)
		idx[m.MenuID] = len(items)
		items = append(items, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list menu: %w", err)
	}
	trows, err := q.Query(`SELECT mt.menu_id, t.topping_id, t.name, t.name_en, t.price FROM menu_toppings mt JOIN toppings t ON t.topping_id = mt.topping_id ORDER BY mt.menu_id, mt.position, t.topping_id`)
	if err != nil {
		return nil, fmt.Errorf("list toppings: %w", err)
	}
	defer trows.Close()
	for trows.Next() {
		var menuID string
		var t Topping
		if err := trows.Scan(&menuID, &t.ToppingID, &t.Name, &t.NameEn, &t.Price); err != nil {
			return nil, fmt.Errorf("list toppings: %w", err)
		}
		t.SoldOut = soldOut(true, stock, t.ToppingID)
		if i, ok := idx[menuID]; ok {
			items[i].Toppings = append(items[i].Toppings, t)
		}
	}
	if err := trows.Err(); err != nil {
		return nil, err
	}
	if err := menuLines(q, items); err != nil {
		return nil, err
	}
	return withContent(q, items, nil)
}

func soldOut(available bool, stock map[string]int64, sku string) bool {
	if !available {
		return true
	}
	q, tracked := stock[sku]
	return tracked && q <= 0
}

// GetMenuItem returns one item with its toppings.
func GetMenuItem(q DB, menuID string) (MenuItem, bool, error) {
	var m MenuItem
	err := q.QueryRow(`SELECT menu_id, name, name_en, category, price, available, sort_order FROM menu_items WHERE menu_id = ?`, menuID).
		Scan(&m.MenuID, &m.Name, &m.NameEn, &m.Category, &m.Price, &m.Available, &m.SortOrder)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("get menu item %s: %w", menuID, err)
	}
	rows, err := q.Query(`SELECT t.topping_id, t.name, t.name_en, t.price FROM menu_toppings mt JOIN toppings t ON t.topping_id = mt.topping_id WHERE mt.menu_id = ? ORDER BY mt.position, t.topping_id`, menuID)
	if err != nil {
		return m, false, fmt.Errorf("get toppings of %s: %w", menuID, err)
	}
	defer rows.Close()
	m.Toppings = []Topping{}
	for rows.Next() {
		var t Topping
		if err := rows.Scan(&t.ToppingID, &t.Name, &t.NameEn, &t.Price); err != nil {
			return m, false, fmt.Errorf("get toppings of %s: %w", menuID, err)
		}
		m.Toppings = append(m.Toppings, t)
	}
	if err := rows.Err(); err != nil {
		return m, false, err
	}
	if err := menuLinesOf(q, &m); err != nil {
		return m, false, err
	}
	m.MenuContent, err = itemContent(q, menuID)
	return m, err == nil, err
}

// UpsertMenuItem writes an item and replaces the toppings it allows
// (topping names and prices are shared by every item that offers them).
func UpsertMenuItem(tx DB, m MenuItem) error {
	_, err := tx.Exec(`INSERT INTO menu_items(menu_id, name, name_en, category, price, available, sort_order) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT(menu_id) DO UPDATE SET name=excluded.name, name_en=excluded.name_en, category=excluded.category,
		price=excluded.price, available=excluded.available, sort_order=excluded.sort_order`,
		m.MenuID, m.Name, m.NameEn, m.Category, m.Price, m.Available, m.SortOrder)
	if err != nil {
		return fmt.Errorf("upsert menu item %s: %w", m.MenuID, err)
	}
	if _, err := tx.Exec(`DELETE FROM menu_toppings WHERE menu_id = ?`, m.MenuID); err != nil {
		return fmt.Errorf("replace toppings of %s: %w", m.MenuID, err)
	}
	for i, t := range m.Toppings {
		if _, err := tx.Exec(`INSERT INTO toppings(topping_id, name, name_en, price) VALUES (?,?,?,?)
			ON CONFLICT(topping_id) DO UPDATE SET name=excluded.name, name_en=excluded.name_en, price=excluded.price`,
			t.ToppingID, t.Name, t.NameEn, t.Price); err != nil {
			return fmt.Errorf("upsert topping %s: %w", t.ToppingID, err)
		}
		if _, err := tx.Exec(`INSERT INTO menu_toppings(menu_id, topping_id, position) VALUES (?,?,?)`, m.MenuID, t.ToppingID, i); err != nil {
			return fmt.Errorf("link topping %s: %w", t.ToppingID, err)
		}
	}
	return upsertMenuLines(tx, m)
}

// CatalogEmpty reports whether no menu item exists yet.
func CatalogEmpty(q DB) (bool, error) {
	var n int
	if err := q.QueryRow(`SELECT EXISTS(SELECT 1 FROM menu_items)`).Scan(&n); err != nil {
		return false, fmt.Errorf("check catalog: %w", err)
	}
	return n == 0, nil
}

// CatalogVersion is the Raft index of the last menu write, 0 when the
// replica predates schema 3 and no menu write happened since (unknown).
// Only menu writes change it, so no API can make two menus share one.
func CatalogVersion(q DB) (int64, error) {
	var v int64
	if err := q.QueryRow(catalogVersionSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("read catalog version: %w", err)
	}
	return v, nil
}

const catalogVersionSQL = `SELECT COALESCE(MAX(version), 0) FROM catalog_version`

// SetCatalogVersion records the index of a menu write.
func SetCatalogVersion(tx DB, v int64) error {
	if _, err := tx.Exec(`DELETE FROM catalog_version`); err != nil {
		return fmt.Errorf("set catalog version: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO catalog_version(version) VALUES (?)`, v); err != nil {
		return fmt.Errorf("set catalog version: %w", err)
	}
	return nil
}
