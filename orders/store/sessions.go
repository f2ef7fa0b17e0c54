package store

import (
	"database/sql"
	"errors"
	"fmt"
)

const sessionCols = `session_id, table_id, pin, status, opened_at, closed_at`

func scanSession(sc rowScanner) (Session, error) {
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
	return queryAll(q, "list sessions", scanSession, query, args...)
}
