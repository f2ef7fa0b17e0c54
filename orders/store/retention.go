package store

import "fmt"

// Long life: housekeeping stamps rows with FSM time, moves closed
// sessions' orders to the archive, and prunes audit rows and archived
// orders past their retention.

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
	ids, err := PruneArchiveIDs(tx, before, limit, wall)
	return int64(len(ids)), err
}

// PruneArchiveIDs is PruneArchive answering the ids it freed (the order
// gate's memory forgets them: orders/admitstate.go).
func PruneArchiveIDs(tx DB, before int64, limit int, wall bool) ([]int64, error) {
	if before <= 0 {
		return nil, nil
	}
	archived, closed := "archived_fsm", "closed_fsm"
	if wall {
		archived, closed = "archived_at", "closed_at"
	}
	ids, err := queryAll(tx, "prune archive", func(sc rowScanner) (int64, error) {
		var id int64
		return id, sc.Scan(&id)
	}, `DELETE FROM orders_archive WHERE order_id IN (SELECT order_id FROM orders_archive WHERE `+archived+` < ? ORDER BY seq LIMIT ?) RETURNING order_id`, before, limit)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(`DELETE FROM sessions WHERE status = ? AND `+closed+` < ? AND session_id NOT IN (SELECT session_id FROM orders) AND session_id NOT IN (SELECT session_id FROM orders_archive)`, SessionClosed, before); err != nil {
		return nil, fmt.Errorf("prune sessions: %w", err)
	}
	return ids, nil
}
