package store

import (
	"database/sql"
	"fmt"
)

// From placeOrder version 5 an admitted order keeps what a resend is
// answered from in its own row: the cart's fingerprint, the admitting
// attempt, and until when (FSM milliseconds) its Idempotency-Key and its
// cart replay it. Those were two KV keys per order, each a random leaf of
// the KV's bbolt file, written again when it lapsed: about a sixth of
// every box's CPU and most of the KV's size per order (issue 19). The row
// is written anyway, and a session's orders are found by orders_session.
const migrationReplayColumns = `ALTER TABLE orders ADD COLUMN fingerprint TEXT;
	ALTER TABLE orders ADD COLUMN attempt TEXT;
	ALTER TABLE orders ADD COLUMN key_until INTEGER;
	ALTER TABLE orders ADD COLUMN cart_until INTEGER;`

// Forever is a replay window with no end (a command whose TTL is 0,
// which the KV keeps without expiry).
const Forever int64 = 1<<63 - 1

// OrderReplay is what an order is replayed by (zero: nothing, an order of
// an older command version or one that keeps its results in the KV).
type OrderReplay struct {
	Fingerprint string
	Attempt     string
	KeyUntil    int64 // its Idempotency-Key replays it while FSM time is before this
	CartUntil   int64 // its cart, under another key, replays it while before this
}

// Replayed is the admission an order's row answers a resend with.
type Replayed struct {
	OrderID     int64
	RequestID   *string
	TotalPrice  int64
	TicketNo    int64
	Fingerprint string
	Attempt     string
}

func nullIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// Replays is what a session's rows answer one resend with: the live
// order under its key and the newest whose cart window is open for its
// cart, from one lookup (both are needed by the same order's Apply).
type Replays struct {
	Key, Cart           Replayed
	KeyFound, CartFound bool
}

// findReplaysQuery reads a session's orders newest first on
// orders_session, keeping those a resend's key or cart replays, and says
// which of the two each one matched.
const findReplaysQuery = `SELECT order_id, request_id, total_price, ticket_no, fingerprint, attempt,
		request_id = ?2 AND key_until > ?4, fingerprint = ?3 AND cart_until > ?4 FROM orders
	WHERE session_id = ?1 AND ((request_id = ?2 AND key_until > ?4) OR (fingerprint = ?3 AND cart_until > ?4)) ORDER BY seq DESC`

// FindReplays looks up, at FSM time now, the session's order admitted
// under requestID whose key window is open and the newest one whose cart
// window is open for fingerprint (an empty requestID or fingerprint
// matches nothing).
func FindReplays(q DB, sessionID, requestID, fingerprint string, now int64) (Replays, error) {
	var out Replays
	rows, err := q.Query(findReplaysQuery, sessionID, requestID, fingerprint, now)
	if err != nil {
		return out, fmt.Errorf("find replays in session %s: %w", sessionID, err)
	}
	defer rows.Close()
	for rows.Next() && !(out.KeyFound && out.CartFound) {
		var r Replayed
		var req, fp, attempt sql.NullString
		var byKey, byCart sql.NullBool
		if err := rows.Scan(&r.OrderID, &req, &r.TotalPrice, &r.TicketNo, &fp, &attempt, &byKey, &byCart); err != nil {
			return out, fmt.Errorf("find replays in session %s: %w", sessionID, err)
		}
		if req.Valid {
			s := req.String
			r.RequestID = &s
		}
		r.Fingerprint, r.Attempt = fp.String, attempt.String
		if !out.KeyFound && byKey.Bool {
			out.Key, out.KeyFound = r, true
		}
		if !out.CartFound && byCart.Bool {
			out.Cart, out.CartFound = r, true
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("find replays in session %s: %w", sessionID, err)
	}
	return out, nil
}

// KeyReplay is the live order of the session admitted under requestID at
// FSM time now, if any.
func KeyReplay(q DB, sessionID, requestID string, now int64) (Replayed, bool, error) {
	r, err := FindReplays(q, sessionID, requestID, "", now)
	return r.Key, r.KeyFound, err
}
