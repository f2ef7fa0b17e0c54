package store

import "database/sql"

// DB is what both *sql.Tx (inside Apply) and *sql.DB (local reads) offer.
type DB interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}
