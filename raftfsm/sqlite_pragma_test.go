package raftfsm

import (
	"path/filepath"
	"testing"
)

// TestSQLitePragmasPerConnection checks that the writer and every reader
// connection get their own page cache size, and the writer the short WAL
// checkpoint interval and its temporary files in memory: settings in the DSN that the driver applies per
// connection, so a reader opened later must have them too.
func TestSQLitePragmasPerConnection(t *testing.T) {
	w, r, err := openSQLite(filepath.Join(t.TempDir(), sqliteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	var v int64
	if err := w.QueryRow("PRAGMA cache_size").Scan(&v); err != nil || v != -writerCacheKiB {
		t.Fatalf("writer cache_size = %d (%v), want %d", v, err, -writerCacheKiB)
	}
	if err := w.QueryRow("PRAGMA wal_autocheckpoint").Scan(&v); err != nil || v != walAutocheckpointPages {
		t.Fatalf("writer wal_autocheckpoint = %d (%v), want %d", v, err, walAutocheckpointPages)
	}
	// 2 = MEMORY: a queued multi-row INSERT's statement journal stays in
	// memory instead of spilling to a temp file past 64 KiB.
	if err := w.QueryRow("PRAGMA temp_store").Scan(&v); err != nil || v != 2 {
		t.Fatalf("writer temp_store = %d (%v), want 2 (memory)", v, err)
	}
	// Hold several reader connections at once so the pool opens more than
	// one: each must carry the reader's cache size.
	var conns []interface{ Close() error }
	for i := 0; i < 4; i++ {
		c, err := r.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if err := c.QueryRowContext(t.Context(), "PRAGMA cache_size").Scan(&v); err != nil || v != -readerCacheKiB {
			t.Fatalf("reader %d cache_size = %d (%v), want %d", i, v, err, -readerCacheKiB)
		}
		var mode string
		if err := c.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("reader %d journal_mode = %q (%v), want wal", i, mode, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}
