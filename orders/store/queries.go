package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// DB is what both *sql.Tx (inside Apply) and *sql.DB (local reads) offer.
type DB interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// ---- catalog ----

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

// ---- stock ----

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
	rows, err := q.Query(`SELECT k.sku, s.quantity FROM (SELECT menu_id AS sku FROM menu_items UNION SELECT topping_id FROM toppings) k
		LEFT JOIN stock s ON s.sku = k.sku ORDER BY k.sku`)
	if err != nil {
		return nil, fmt.Errorf("list stock: %w", err)
	}
	defer rows.Close()
	out := []StockLevel{}
	for rows.Next() {
		var l StockLevel
		var qn sql.NullInt64
		if err := rows.Scan(&l.SKU, &qn); err != nil {
			return nil, fmt.Errorf("list stock: %w", err)
		}
		if qn.Valid {
			v := qn.Int64
			l.Quantity = &v
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// ---- sessions ----

const sessionCols = `session_id, table_id, pin, status, opened_at, closed_at`

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var opened int64
	var closed sql.NullInt64
	if err := sc.Scan(&s.SessionID, &s.TableID, &s.PIN, &s.Status, &opened, &closed); err != nil {
		return s, err
	}
	s.OpenedAt = FormatTime(opened)
	if closed.Valid {
		c := FormatTime(closed.Int64)
		s.ClosedAt = &c
	}
	return s, nil
}

// GetSession returns a session by id.
func GetSession(q DB, id string) (Session, bool, error) {
	s, err := scanSession(q.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE session_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("get session: %w", err)
	}
	return s, true, nil
}

// SessionTable is a session's table and status, what an order needs of
// it (GetSession also scans and formats what an order never uses), and
// the catalog version (CatalogVersion) read in the same statement: an
// order reads both, and one statement fewer per order is a few per cent
// of its Apply. found is false for an unknown session (version 0 then).
func SessionTable(q DB, id string) (tableID, status string, catalogVersion int64, found bool, err error) {
	err = q.QueryRow(`SELECT table_id, status, (`+catalogVersionSQL+`) FROM sessions WHERE session_id = ?`, id).
		Scan(&tableID, &status, &catalogVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, false, nil
	}
	if err != nil {
		return "", "", 0, false, fmt.Errorf("get session: %w", err)
	}
	return tableID, status, catalogVersion, true, nil
}

// InsertSession opens a session (and records its table).
func InsertSession(tx DB, id, tableID, pin string, at int64) error {
	if _, err := tx.Exec(`INSERT INTO tables(table_id, created_at) VALUES (?,?) ON CONFLICT(table_id) DO NOTHING`, tableID, at); err != nil {
		return fmt.Errorf("record table %s: %w", tableID, err)
	}
	if _, err := tx.Exec(`INSERT INTO sessions(`+sessionCols+`) VALUES (?,?,?,?,?,NULL)`, id, tableID, pin, SessionActive, at); err != nil {
		return fmt.Errorf("insert session: %w", err)
	}
	return nil
}

// CloseSession marks a session closed, paid by payment ("" if not said).
func CloseSession(tx DB, id string, at int64, payment string) error {
	if _, err := tx.Exec(`UPDATE sessions SET status = ?, closed_at = ?, payment = ? WHERE session_id = ?`, SessionClosed, at, payment, id); err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	return nil
}

// ListSessions returns sessions, newest first, optionally by status.
func ListSessions(q DB, status string, limit int) ([]Session, error) {
	query := `SELECT ` + sessionCols + ` FROM sessions`
	args := []any{}
	if status != "" {
		query += ` WHERE status = ?`
		args = append(args, status)
	}
	query += ` ORDER BY opened_at DESC, session_id LIMIT ?`
	args = append(args, limit)
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ---- orders ----

const orderCols = `order_id, seq, session_id, table_id, status, items, total_price, created_at, updated_at, request_id, client_id, source`

func scanOrder(sc interface{ Scan(...any) error }) (Order, error) {
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

// InsertOrder stores a new order under o.OrderID unless that id is taken
// (live or archived): inserted is false then, and nothing was written.
// One statement checks and inserts (the check was a statement of its
// own). createdAt is the leader's wall clock; r is what a resend replays
// it by (the zero OrderReplay for none, replay.go).
func InsertOrder(tx DB, o Order, createdAt int64, r OrderReplay) (inserted bool, err error) {
	items, err := json.Marshal(o.Items)
	if err != nil {
		return false, fmt.Errorf("encode order items: %w", err)
	}
	var client any
	if o.ClientID != "" {
		client = o.ClientID
	}
	var fp, attempt any
	if r != (OrderReplay{}) {
		fp, attempt = r.Fingerprint, r.Attempt
	}
	res, err := tx.Exec(`INSERT INTO orders(`+orderCols+`, ticket_no, fingerprint, attempt, key_until, cart_until) SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17
		WHERE NOT EXISTS (SELECT 1 FROM orders_archive WHERE order_id = ?1) ON CONFLICT(order_id) DO NOTHING`,
		o.OrderID, o.Seq, o.SessionID, o.TableID, o.Status, string(items), o.TotalPrice, createdAt, createdAt, o.RequestID, client, o.Source, o.TicketNo,
		fp, attempt, nullIfZero(r.KeyUntil), nullIfZero(r.CartUntil))
	if err != nil {
		return false, fmt.Errorf("insert order %d: %w", o.OrderID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert order %d: %w", o.OrderID, err)
	}
	return n == 1, nil
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
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	out := []Order{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, fmt.Errorf("list orders: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
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

// ---- audit ----

// Audit is one row to write.
type Audit struct {
	At               int64
	RequestID        string
	ClientID         string
	SessionID        string
	OrderID          int64
	ReasonCode       string
	IdempotentReplay bool
	Node             string
	Detail           string
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// InsertAudit appends an audit row.
func InsertAudit(tx DB, a Audit) error {
	var order any
	if a.OrderID != 0 {
		order = a.OrderID
	}
	_, err := tx.Exec(`INSERT INTO audit(at, request_id, client_id, session_id, order_id, reason_code, idempotent_replay, node, detail) VALUES (?,?,?,?,?,?,?,?,?)`,
		a.At, nullStr(a.RequestID), nullStr(a.ClientID), nullStr(a.SessionID), order, a.ReasonCode, a.IdempotentReplay, a.Node, a.Detail)
	if err != nil {
		return fmt.Errorf("insert audit: %w", err)
	}
	return nil
}

// ListAudit returns the newest entries first.
func ListAudit(q DB, limit int) ([]AuditEntry, error) {
	rows, err := q.Query(`SELECT id, at, request_id, client_id, session_id, order_id, reason_code, idempotent_replay, node, detail FROM audit ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var at int64
		var req, client, sess sql.NullString
		var order sql.NullInt64
		if err := rows.Scan(&e.ID, &at, &req, &client, &sess, &order, &e.ReasonCode, &e.IdempotentReplay, &e.Node, &e.Detail); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		e.At = FormatTime(at)
		if req.Valid {
			e.RequestID = &req.String
		}
		if client.Valid {
			e.ClientID = &client.String
		}
		if sess.Valid {
			e.SessionID = &sess.String
		}
		if order.Valid {
			e.OrderID = &order.Int64
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ---- outbox (cloud sync) ----

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

// InsertOutbox records that an order changed.
func InsertOutbox(tx DB, orderID int64, op string) error {
	if _, err := tx.Exec(`INSERT INTO outbox(order_id, op) VALUES (?,?)`, orderID, op); err != nil {
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

// ---- long life ----

// StampRetention gives the audit rows and closed sessions that have no
// FSM time yet the current one (now): rows carry the proposer's wall
// clock, which may be decades off, so retention counts from the FSM time
// housekeeping first saw a row (at most one housekeeping period after it
// was written: a row is kept that much longer, never less).
func StampRetention(tx DB, now int64) error {
	if _, err := tx.Exec(`UPDATE audit SET at_fsm = ? WHERE at_fsm IS NULL`, now); err != nil {
		return fmt.Errorf("stamp audit: %w", err)
	}
	if _, err := tx.Exec(`UPDATE sessions SET closed_fsm = ? WHERE status = ? AND closed_fsm IS NULL`, now, SessionClosed); err != nil {
		return fmt.Errorf("stamp sessions: %w", err)
	}
	return nil
}

// ArchiveClosed moves up to limit orders of closed sessions into the
// archive table; at is the wall clock (display), now the FSM time.
func ArchiveClosed(tx DB, at, now int64, limit int) (int64, error) {
	res, err := tx.Exec(`INSERT INTO orders_archive(`+orderCols+`, `+orderLineCols+`, archived_at, archived_fsm)
		SELECT `+prefixed("o.", orderCols+", "+orderLineCols)+`, ?, ? FROM orders o JOIN sessions s ON s.session_id = o.session_id
		WHERE s.status = ? ORDER BY o.seq LIMIT ?`, at, now, SessionClosed, limit)
	if err != nil {
		return 0, fmt.Errorf("archive orders: %w", err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(`DELETE FROM orders WHERE order_id IN (SELECT o.order_id FROM orders o JOIN sessions s ON s.session_id = o.session_id
		WHERE s.status = ? ORDER BY o.seq LIMIT ?)`, SessionClosed, limit); err != nil {
		return 0, fmt.Errorf("archive orders: %w", err)
	}
	return n, nil
}

// Retention clocks: the FSM time housekeeping stamped (RetainFSM), or the
// proposer's wall clock (RetainWall: entries of builds that judged it so,
// kept for replaying old logs alike on every box).
const (
	RetainFSM  = false
	RetainWall = true
)

// PruneAudit deletes up to limit audit rows older than before.
func PruneAudit(tx DB, before int64, limit int, wall bool) (int64, error) {
	if before <= 0 {
		return 0, nil
	}
	col := "at_fsm"
	if wall {
		col = "at"
	}
	res, err := tx.Exec(`DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE `+col+` < ? ORDER BY id LIMIT ?)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune audit: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// PruneArchive deletes archived orders (and their closed sessions) older
// than before.
func PruneArchive(tx DB, before int64, limit int, wall bool) (int64, error) {
	if before <= 0 {
		return 0, nil
	}
	archived, closed := "archived_fsm", "closed_fsm"
	if wall {
		archived, closed = "archived_at", "closed_at"
	}
	res, err := tx.Exec(`DELETE FROM orders_archive WHERE order_id IN (SELECT order_id FROM orders_archive WHERE `+archived+` < ? ORDER BY seq LIMIT ?)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune archive: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.Exec(`DELETE FROM sessions WHERE status = ? AND `+closed+` < ? AND session_id NOT IN (SELECT session_id FROM orders) AND session_id NOT IN (SELECT session_id FROM orders_archive)`, SessionClosed, before); err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	return n, nil
}
