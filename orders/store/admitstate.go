package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// The reads below build the order gate's memory (orders/admitstate.go)
// from the files, at start, after a snapshot restore and whenever that
// memory was dropped; the writes are the gate's own writes through it.
// Apply answers orders from the memory: these run once per rebuild, not
// per order.

// ActiveSessions is every active session whole, as GetSession reads it,
// by id (on sessions_status): the admission state's sessions, which the
// order gate answers GetSession from (orders/admitsession.go).
func ActiveSessions(q DB) ([]Session, error) {
	return queryAll(q, "list active sessions", scanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE status = ? ORDER BY session_id`, SessionActive)
}

// LiveReplay is an order of an active session whose key or cart still
// replays it at some FSM time (FindReplays), with until when.
type LiveReplay struct {
	SessionID string
	Seq       int64
	Replayed
	KeyUntil, CartUntil int64 // 0: that window is shut
}

// LiveReplays lists, oldest first, the orders of active sessions whose
// key or cart window is open at FSM time now: all FindReplays can find.
func LiveReplays(q DB, now int64) ([]LiveReplay, error) {
	return queryAll(q, "list live replays", func(sc rowScanner) (LiveReplay, error) {
		var r LiveReplay
		var req, fp, attempt sql.NullString
		var keyUntil, cartUntil sql.NullInt64
		if err := sc.Scan(&r.SessionID, &r.Seq, &r.OrderID, &req, &r.TotalPrice, &r.TicketNo, &fp, &attempt, &keyUntil, &cartUntil); err != nil {
			return r, err
		}
		if req.Valid {
			s := req.String
			r.RequestID = &s
		}
		r.Fingerprint, r.Attempt = fp.String, attempt.String
		if keyUntil.Valid && keyUntil.Int64 > now && req.Valid {
			r.KeyUntil = keyUntil.Int64
		}
		if cartUntil.Valid && cartUntil.Int64 > now && fp.Valid {
			r.CartUntil = cartUntil.Int64
		}
		return r, nil
	}, `SELECT o.session_id, o.seq, o.order_id, o.request_id, o.total_price, o.ticket_no, o.fingerprint, o.attempt, o.key_until, o.cart_until
		FROM sessions s JOIN orders o ON o.session_id = s.session_id
		WHERE s.status = ?1 AND (o.key_until > ?2 OR o.cart_until > ?2) ORDER BY o.seq`, SessionActive, now)
}

// OrderIDs lists every order id in use, live or archived (InsertOrder
// refuses both).
func OrderIDs(q DB) ([]int64, error) {
	return queryAll(q, "list order ids", func(sc rowScanner) (int64, error) {
		var id int64
		return id, sc.Scan(&id)
	}, `SELECT order_id FROM orders UNION ALL SELECT order_id FROM orders_archive`)
}

// TicketCounter is what NextTicketNo reads: the index of the last day
// close (0: none) and the counter's row, if there is one.
type TicketCounter struct {
	DayFrom         int64 // MAX(day_closes.closed_index), 0 for none
	Exists          bool
	RowDay, RowLast int64 // the row's day_from and last_no
}

// ReadTicketCounter reads the ticket counter's state.
func ReadTicketCounter(q DB) (TicketCounter, error) {
	var c TicketCounter
	if err := q.QueryRow(`SELECT COALESCE(MAX(closed_index), 0) FROM day_closes`).Scan(&c.DayFrom); err != nil {
		return c, fmt.Errorf("read day closes: %w", err)
	}
	err := q.QueryRow(`SELECT day_from, last_no FROM ticket_counter`).Scan(&c.RowDay, &c.RowLast)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read ticket counter: %w", err)
	}
	c.Exists = true
	return c, nil
}

// Next is the ticket number NextTicketNo would hand out and the counter
// after it (the same rule: a day close starts again at 1).
func (c TicketCounter) Next() (int64, TicketCounter) {
	next := int64(1)
	if c.Exists && c.RowDay == c.DayFrom {
		next = c.RowLast + 1
	}
	return next, TicketCounter{DayFrom: c.DayFrom, Exists: true, RowDay: c.DayFrom, RowLast: next}
}

// WriteTicketCounter stores the counter as prev.Next left it (next): the
// row NextTicketNo's UPDATE (or, for the first ticket, INSERT) would
// leave. Within a business day only last_no moves, and on the apply
// transaction that is queued (raftfsm's QueueSet, keyed by the row's
// day_from), so a group's orders write the counter once; the first
// ticket and a new day's write at once (after what is queued for the
// table, which the statement names).
func WriteTicketCounter(tx DB, prev, next TicketCounter) error {
	var err error
	switch q, queues := tx.(setQueuer); {
	case prev.Exists && prev.RowDay == next.RowDay && queues:
		err = q.QueueSet("ticket_counter", "day_from", "last_no", next.RowDay, next.RowLast)
	case prev.Exists:
		_, err = tx.Exec(`UPDATE ticket_counter SET last_no = ?, day_from = ?`, next.RowLast, next.RowDay)
	default:
		_, err = tx.Exec(`INSERT INTO ticket_counter(day_from, last_no) VALUES (?, ?)`, next.RowDay, next.RowLast)
	}
	if err != nil {
		return fmt.Errorf("advance ticket counter: %w", err)
	}
	return nil
}
