package store

// ActiveSessionRows is every active session whole, as GetSession reads
// it, by id: the admission state's sessions (orders/admitsession.go),
// which the order gate answers GetSession from.
func ActiveSessionRows(q DB) ([]Session, error) {
	return queryAll(q, "list active sessions", scanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE status = ? ORDER BY session_id`, SessionActive)
}
