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
	registerTable(commandTable{reg: reg, maxVersion: func(raftfsm.CommandType) uint8 { return 1 }})
}

// RegisterGateOld registers an old build of the version gate's era: its
// table applies version 1 of every command and its one feature level
// allows exactly that.
func RegisterGateOld(reg *raftfsm.Registry) {
	registerTable(commandTable{reg: reg, maxVersion: func(raftfsm.CommandType) uint8 { return 1 }})
	registerLevels(reg, []map[raftfsm.CommandType]uint8{{}})
}

// RegisterGateNew registers the build that follows it: this build's
// table, whose newer versions a level 2 switches on.
func RegisterGateNew(reg *raftfsm.Registry) {
	registerTable(commandTable{reg: reg, maxVersion: versionOf})
	registerLevels(reg, []map[raftfsm.CommandType]uint8{{}, commandVersions})
}

// NewestVersion is the newest version of t this build applies.
func NewestVersion(t raftfsm.CommandType) uint8 { return versionOf(t) }

// ProposedVersion is the version s proposes for t now.
func (s *Service) ProposedVersion(t raftfsm.CommandType) uint8 { return s.version(t) }

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
			rows, err := rowsText(db, `SELECT * FROM "`+name+`" ORDER BY rowid`)
			if err != nil {
				return err
			}
			out[name] = rows
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rowsText is every row query answers, each as fmt's %v of its values
// (nil for none).
func rowsText(db *sql.DB, query string) ([]string, error) {
	rs, err := db.Query(query)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%v", vals))
	}
	return out, rs.Err()
}

// SetOutboxTrim makes a store without a cloud drain its outbox every d
// (a test that switches the cloud off sees the rows go without waiting
// 30 s).
func SetOutboxTrim(d time.Duration) func() {
	old := outboxTrimEvery
	outboxTrimEvery = d
	return func() { outboxTrimEvery = old }
}

// BusinessDate is the business day's label of t (reports.go).
var BusinessDate = businessDate

// WithoutAdmissionMemory makes s's handlers read the files only, as a
// node without the admission state does, until restore.
func (s *Service) WithoutAdmissionMemory() (restore func()) {
	a := s.admit
	s.admit = nil
	return func() { s.admit = a }
}

// OrderGateFromMemory reports whether the order gate answers the session
// from the admission state now (admitsession.go).
func (s *Service) OrderGateFromMemory(sessionID string) bool {
	if s.admit == nil {
		return false
	}
	_, usable := s.admit.session(s.node.FSM().Epoch(), sessionID)
	return usable
}
