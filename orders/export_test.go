package orders

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"masterorder/raftfsm"
)

// RegisterV1 registers the dispatch table of the build before version 2
// of any command (every handler at version 1): an old box in a rolling
// upgrade.
func RegisterV1(reg *raftfsm.Registry) {
	registerTable(commandTable{reg, func(raftfsm.CommandType) uint8 { return 1 }})
}

// SetPrintIO shortens the printer I/O bounds for fault tests.
func SetPrintIO(dial, io time.Duration) func() {
	d, i := printDialTimeout, printIOTimeout
	printDialTimeout, printIOTimeout = dial, io
	return func() { printDialTimeout, printIOTimeout = d, i }
}

// SetCloudStatus makes s report st as its cloud sync status (status and
// metrics) instead of reading the outbox.
func (s *Service) SetCloudStatus(st CloudSyncStatus) {
	s.cloudStatusFn = func() CloudSyncStatus { return st }
}

// FSMTables reads every domain table of an FSM's SQLite replica, row by
// row (the FSM's own bookkeeping table excluded).
func FSMTables(t *testing.T, f *raftfsm.FSM) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := f.Query(func(db *sql.DB) error {
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name <> '_fsm_meta' ORDER BY name`)
		if err != nil {
			return err
		}
		var names []string
		for rows.Next() {
			var name string
			rows.Scan(&name)
			names = append(names, name)
		}
		rows.Close()
		for _, name := range names {
			rs, err := db.Query(`SELECT * FROM "` + name + `" ORDER BY rowid`)
			if err != nil {
				return err
			}
			cols, _ := rs.Columns()
			for rs.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rs.Scan(ptrs...); err != nil {
					rs.Close()
					return err
				}
				out[name] = append(out[name], fmt.Sprintf("%v", vals))
			}
			rs.Close()
			if _, ok := out[name]; !ok {
				out[name] = nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
