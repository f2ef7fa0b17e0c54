package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// Call statuses and kinds.
const (
	CallOpen = "OPEN"
	CallDone = "DONE"
)

// Call is a guest's call for staff, the bill or water.
type Call struct {
	CallID    int64  `json:"callId"`
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

const callCols = `call_id, session_id, table_id, kind, status, created_at`

func scanCall(sc rowScanner) (Call, error) {
	var c Call
	var created int64
	if err := sc.Scan(&c.CallID, &c.SessionID, &c.TableID, &c.Kind, &c.Status, &created); err != nil {
		return c, err
	}
	c.CreatedAt = FormatTime(created)
	return c, nil
}

// OpenCallOfKind is the session's open call of that kind, if any.
func OpenCallOfKind(q DB, sessionID, kind string) (Call, bool, error) {
	c, err := scanCall(q.QueryRow(`SELECT `+callCols+` FROM calls WHERE session_id = ? AND kind = ? AND status = ? ORDER BY call_id LIMIT 1`,
		sessionID, kind, CallOpen))
	if err == sql.ErrNoRows {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("read call: %w", err)
	}
	return c, true, nil
}

// GetCall reads one call.
func GetCall(q DB, id int64) (Call, bool, error) {
	c, err := scanCall(q.QueryRow(`SELECT `+callCols+` FROM calls WHERE call_id = ?`, id))
	if err == sql.ErrNoRows {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("read call: %w", err)
	}
	return c, true, nil
}

// InsertCall stores a new open call and answers it; at is the leader's
// wall clock (display).
func InsertCall(tx DB, sessionID, tableID, kind string, at int64) (Call, error) {
	res, err := tx.Exec(`INSERT INTO calls(session_id, table_id, kind, status, created_at) VALUES (?, ?, ?, ?, ?)`,
		sessionID, tableID, kind, CallOpen, at)
	if err != nil {
		return Call{}, fmt.Errorf("insert call: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Call{}, fmt.Errorf("insert call: %w", err)
	}
	return Call{CallID: id, SessionID: sessionID, TableID: tableID, Kind: kind, Status: CallOpen, CreatedAt: FormatTime(at)}, nil
}

// SetCallDone marks a call done.
func SetCallDone(tx DB, id int64, at int64) error {
	if _, err := tx.Exec(`UPDATE calls SET status = ?, done_at = ? WHERE call_id = ?`, CallDone, at, id); err != nil {
		return fmt.Errorf("close call: %w", err)
	}
	return nil
}

// ListCalls lists calls oldest first, optionally of one status, at most
// limit; sessionID narrows to one session when not empty.
func ListCalls(q DB, status, sessionID string, limit int) ([]Call, error) {
	query := `SELECT ` + callCols + ` FROM calls WHERE (? = '' OR status = ?) AND (? = '' OR session_id = ?) ORDER BY call_id LIMIT ?`
	return queryAll(q, "list calls", scanCall, query, status, status, sessionID, sessionID, limit)
}

// ---- business days ----

// DayClose is one recorded end of a business day.
type DayClose struct {
	Day         int64
	Label       string
	ClosedIndex uint64
	ClosedFSM   int64
	ClosedAt    int64 // leader's wall clock, display only
	Forced      bool
}

// CountActiveSessions counts the sessions not checked out.
func CountActiveSessions(q DB) (int64, error) {
	var n int64
	if err := q.QueryRow(`SELECT COUNT(*) FROM sessions WHERE status = ?`, SessionActive).Scan(&n); err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}

// InsertDayClose records the next day number's close.
func InsertDayClose(tx DB, label string, index uint64, fsm, at int64, forced bool) (DayClose, error) {
	d := DayClose{Label: label, ClosedIndex: index, ClosedFSM: fsm, ClosedAt: at, Forced: forced}
	if err := tx.QueryRow(`SELECT COALESCE(MAX(day), 0) + 1 FROM day_closes`).Scan(&d.Day); err != nil {
		return d, fmt.Errorf("next day: %w", err)
	}
	f := 0
	if forced {
		f = 1
	}
	if _, err := tx.Exec(`INSERT INTO day_closes(day, label, closed_index, closed_fsm, closed_at, forced) VALUES (?, ?, ?, ?, ?, ?)`,
		d.Day, label, int64(index), fsm, at, f); err != nil {
		return d, fmt.Errorf("close day: %w", err)
	}
	return d, nil
}

// DayCloses lists every close, oldest first.
func DayCloses(q DB) ([]DayClose, error) {
	rows, err := q.Query(`SELECT day, label, closed_index, closed_fsm, closed_at, forced FROM day_closes ORDER BY day`)
	if err != nil {
		return nil, fmt.Errorf("list day closes: %w", err)
	}
	defer rows.Close()
	var out []DayClose
	for rows.Next() {
		var d DayClose
		var idx, f int64
		if err := rows.Scan(&d.Day, &d.Label, &idx, &d.ClosedFSM, &d.ClosedAt, &f); err != nil {
			return nil, fmt.Errorf("list day closes: %w", err)
		}
		d.ClosedIndex, d.Forced = uint64(idx), f != 0
		out = append(out, d)
	}
	return out, rows.Err()
}

// SaleRow is one order as reports see it, from the live or archive table.
type SaleRow struct {
	Order
	Payment   string
	CreatedMs int64
}

// OrdersInSeqRange lists orders (live and archived) with lo < seq <= hi
// (hi 0: no upper bound), with their session's payment.
func OrdersInSeqRange(q DB, lo, hi uint64) ([]SaleRow, error) {
	upper := int64(hi)
	if hi == 0 {
		upper = 1<<63 - 1
	}
	query := `SELECT ` + prefixed("o.", orderCols) + `, COALESCE(s.payment, '') FROM (
		SELECT ` + orderCols + ` FROM orders WHERE seq > ? AND seq <= ?
		UNION ALL SELECT ` + orderCols + ` FROM orders_archive WHERE seq > ? AND seq <= ?) o
		LEFT JOIN sessions s ON s.session_id = o.session_id ORDER BY o.seq`
	rows, err := q.Query(query, int64(lo), upper, int64(lo), upper)
	if err != nil {
		return nil, fmt.Errorf("report orders: %w", err)
	}
	defer rows.Close()
	var out []SaleRow
	for rows.Next() {
		var r SaleRow
		var items string
		var updated int64
		var req, client sql.NullString
		if err := rows.Scan(&r.OrderID, &r.Seq, &r.SessionID, &r.TableID, &r.Status, &items, &r.TotalPrice, &r.CreatedMs, &updated,
			&req, &client, &r.Source, &r.Payment); err != nil {
			return nil, fmt.Errorf("report orders: %w", err)
		}
		if err := json.Unmarshal([]byte(items), &r.Items); err != nil {
			return nil, fmt.Errorf("order %d items: %w", r.OrderID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
