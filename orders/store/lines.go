package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Order lines (issue 16): option groups and the station of menu items,
// ticket numbers and station bumps of orders. Kept apart from the rest of
// the catalog so the menu's other fields can grow beside them.

// DefaultStation prepares every item that names none.
const DefaultStation = "kitchen"

// Option is one choice of a group, with its surcharge.
type Option struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	NameEn   string `json:"nameEn,omitempty"`
	// Names: extra languages by BCP 47 tag. omitempty keeps the stored
	// bytes of a group without them as they were before the field.
	Names Names `json:"names,omitempty"`
	Price int64 `json:"price"`
}

// OptionGroup is a choice a guest makes for a line: min ≥ 1 is required.
type OptionGroup struct {
	GroupID string   `json:"groupId"`
	Name    string   `json:"name"`
	NameEn  string   `json:"nameEn,omitempty"`
	Names   Names    `json:"names,omitempty"` // as Option.Names
	Min     int      `json:"min"`
	Max     int      `json:"max"`
	Options []Option `json:"options"`
}

// OptionRef is a chosen option on an order line, priced at order time.
type OptionRef struct {
	GroupID  string `json:"groupId"`
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Price    int64  `json:"price"`
}

// migrationLines is the schema of order lines (numbered where it is
// listed in migrations, so it can move). Items without a row are in the
// default station with no option groups; orders before it have ticket 0.
const migrationLines = `CREATE TABLE menu_lines (
		menu_id       TEXT PRIMARY KEY,
		station       TEXT NOT NULL,
		option_groups TEXT NOT NULL
	);
	ALTER TABLE orders ADD COLUMN ticket_no INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE orders ADD COLUMN bumped TEXT NOT NULL DEFAULT '[]';
	ALTER TABLE orders_archive ADD COLUMN ticket_no INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE orders_archive ADD COLUMN bumped TEXT NOT NULL DEFAULT '[]';
	-- the last ticket number given, and the day close it counts from
	CREATE TABLE ticket_counter (day_from INTEGER NOT NULL, last_no INTEGER NOT NULL);`

// migrationDayCloseIndex lets NextTicketNo seek the newest day close
// instead of scanning every close ever made (numbered where it is listed
// in migrations, so it can move).
const migrationDayCloseIndex = `CREATE INDEX day_closes_closed_index ON day_closes(closed_index);`

// orderLineCols follow orderCols in every read of a whole order.
const orderLineCols = `ticket_no, bumped`

// withLineDefaults fills what orders stored before order lines lack, so
// every line carries station and options (API.md).
func withLineDefaults(o *Order, bumped string) error {
	o.Bumped = []string{}
	if bumped != "" {
		if err := json.Unmarshal([]byte(bumped), &o.Bumped); err != nil {
			return fmt.Errorf("order %d bumps: %w", o.OrderID, err)
		}
	}
	for i := range o.Items {
		it := &o.Items[i]
		if it.Station == "" {
			it.Station = DefaultStation
		}
		if it.Options == nil {
			it.Options = []OptionRef{}
		}
	}
	return nil
}

// menuLines adds station and option groups to items (by menu id).
func menuLines(q DB, items []MenuItem) error {
	idx := make(map[string]int, len(items))
	for i := range items {
		items[i].Station, items[i].OptionGroups = DefaultStation, []OptionGroup{}
		idx[items[i].MenuID] = i
	}
	if len(items) == 1 {
		return menuLinesOf(q, &items[0])
	}
	rows, err := q.Query(`SELECT menu_id, station, option_groups FROM menu_lines`)
	if err != nil {
		return fmt.Errorf("list menu lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, station, groups string
		if err := rows.Scan(&id, &station, &groups); err != nil {
			return fmt.Errorf("list menu lines: %w", err)
		}
		if i, ok := idx[id]; ok {
			if err := setMenuLines(&items[i], station, groups); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

func menuLinesOf(q DB, m *MenuItem) error {
	var station, groups string
	err := q.QueryRow(`SELECT station, option_groups FROM menu_lines WHERE menu_id = ?`, m.MenuID).Scan(&station, &groups)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get menu lines of %s: %w", m.MenuID, err)
	}
	return setMenuLines(m, station, groups)
}

func setMenuLines(m *MenuItem, station, groups string) error {
	m.Station = station
	if err := json.Unmarshal([]byte(groups), &m.OptionGroups); err != nil {
		return fmt.Errorf("option groups of %s: %w", m.MenuID, err)
	}
	if m.OptionGroups == nil {
		m.OptionGroups = []OptionGroup{}
	}
	return nil
}

// upsertMenuLines writes an item's station and option groups.
func upsertMenuLines(tx DB, m MenuItem) error {
	station := m.Station
	if station == "" {
		station = DefaultStation
	}
	groups := m.OptionGroups
	if groups == nil {
		groups = []OptionGroup{}
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return fmt.Errorf("encode option groups: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO menu_lines(menu_id, station, option_groups) VALUES (?,?,?)
		ON CONFLICT(menu_id) DO UPDATE SET station=excluded.station, option_groups=excluded.option_groups`, m.MenuID, station, string(b)); err != nil {
		return fmt.Errorf("upsert menu lines of %s: %w", m.MenuID, err)
	}
	return nil
}

// NextTicketNo hands out the next ticket number of the business day that
// began after the newest day close (its Raft index; 0: none yet): 1, 2,
// 3 … counted in ticket_counter's one row. One statement per order: SET
// reads the row's old values, so the CASE sees the day the last number
// was given in. Only the first order ever finds no row and inserts it.
func NextTicketNo(tx DB) (int64, error) {
	const dayFrom = `(SELECT COALESCE(MAX(closed_index), 0) FROM day_closes)`
	var next int64
	err := tx.QueryRow(`UPDATE ticket_counter SET
		last_no = CASE WHEN day_from = ` + dayFrom + ` THEN last_no + 1 ELSE 1 END,
		day_from = ` + dayFrom + ` RETURNING last_no`).Scan(&next)
	if err == nil {
		return next, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("advance ticket counter: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO ticket_counter(day_from, last_no) SELECT ` + dayFrom + `, 1`); err != nil {
		return 0, fmt.Errorf("start ticket counter: %w", err)
	}
	return 1, nil
}

// SetOrderBumped records the stations that bumped an order (sorted).
func SetOrderBumped(tx DB, id int64, stations []string, at int64) error {
	s := slices.Clone(stations)
	slices.Sort(s)
	b, err := json.Marshal(slices.Compact(s))
	if err != nil {
		return fmt.Errorf("encode bumps: %w", err)
	}
	if _, err := tx.Exec(`UPDATE orders SET bumped = ?, updated_at = ? WHERE order_id = ?`, string(b), at, id); err != nil {
		return fmt.Errorf("bump order %d: %w", id, err)
	}
	return nil
}

// Stations lists the stations with a line in o, in line order.
func (o Order) Stations() []string {
	var out []string
	for _, it := range o.Items {
		st := it.Station
		if st == "" {
			st = DefaultStation
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// ForStation is o narrowed to the lines of station (ok false: none).
func (o Order) ForStation(station string) (Order, bool) {
	var lines []OrderItem
	for _, it := range o.Items {
		if it.Station == station || it.Station == "" && station == DefaultStation {
			lines = append(lines, it)
		}
	}
	if len(lines) == 0 {
		return o, false
	}
	o.Items = lines
	return o, true
}
