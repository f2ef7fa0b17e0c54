package store

import (
	"database/sql"
	"fmt"
)

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

// InsertAudit appends an audit row (inside Apply, the row is queued:
// queue.go).
func InsertAudit(tx DB, a Audit) error {
	var order any
	if a.OrderID != 0 {
		order = a.OrderID
	}
	err := auditInsert.insert(tx, a.At, nullStr(a.RequestID), nullStr(a.ClientID), nullStr(a.SessionID), order, a.ReasonCode, a.IdempotentReplay, a.Node, a.Detail)
	if err != nil {
		return fmt.Errorf("insert audit: %w", err)
	}
	return nil
}

// ListAudit returns the newest entries first.
func ListAudit(q DB, limit int) ([]AuditEntry, error) {
	return queryAll(q, "list audit", scanAuditEntry, `SELECT id, at, request_id, client_id, session_id, order_id, reason_code, idempotent_replay, node, detail FROM audit ORDER BY id DESC LIMIT ?`, limit)
}

func scanAuditEntry(sc rowScanner) (AuditEntry, error) {
	var e AuditEntry
	var at int64
	var req, client, sess sql.NullString
	var order sql.NullInt64
	if err := sc.Scan(&e.ID, &at, &req, &client, &sess, &order, &e.ReasonCode, &e.IdempotentReplay, &e.Node, &e.Detail); err != nil {
		return e, err
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
	return e, nil
}
