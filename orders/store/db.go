package store

import (
	"database/sql"
	"fmt"
)

// DB is what both *sql.Tx (inside Apply) and *sql.DB (local reads) offer.
type DB interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// rowScanner is a row to scan: *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// queryAll runs query and scans every row with scan; what names the list
// in its errors. No row is an empty list, not nil (a JSON []).
func queryAll[T any](q DB, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
