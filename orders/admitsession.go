package orders

import (
	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// The order gate's session and catalog version, from the admission state
// (issue 41). A guest order's handler looked its session up and read the
// catalog version through SQLite, whose reader's page cache every FSM
// group commit empties; the admission state already holds both, for
// Apply. The handler reads them beside the apply path under the memory's
// mu, only when the memory holds the files at the FSM's current epoch,
// and only for an active session: a closed or unknown one goes the files'
// way as before (its catch-up before 404, its 410).
//
// The memory may be ahead of the files by the FSM's open group. Those
// entries are committed in Raft, and what they did is what the files say
// once the group commits, what any box says after catching up:
//   - a session opened in the open group is found (the files would say
//     404 only until their commit; the order's Apply finds it);
//   - a session closed in it is not active in memory, so the files
//     answer, as before (the order's Apply answers 410);
//   - a PIN reset in it already asks for the new PIN (the old one and
//     credentials made from it are void once committed; staff read the
//     new PIN only from the reset's answer, after the files' commit);
//   - a menu write in it moves the version past the menu the handler's
//     catalog cache holds, so the menu is read from the files, as before
//     (the cache is only ever filled from the files, at their version).

// session is store.GetSession of an active session, from memory; usable
// is false when the memory does not hold the files at epoch (the FSM's
// current one) or the session is not active in it.
func (s *admitState) session(epoch uint64, id string) (sess store.Session, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.heldAt(epoch) {
		return sess, false
	}
	a := s.sessions[id]
	if a == nil {
		return sess, false
	}
	return store.Session{SessionID: id, TableID: a.table, PIN: a.pin, Status: store.SessionActive, OpenedAt: a.openedAt}, true
}

// catalogVersion is store.CatalogVersion from memory; usable as session's.
func (s *admitState) catalogVersion(epoch uint64) (v int64, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.heldAt(epoch) {
		return 0, false
	}
	return s.catalogV, true
}

// newAdmitSession is an active session's share of the memory, from its
// row.
func newAdmitSession(row store.Session) *admitSession {
	return &admitSession{table: row.TableID, pin: row.PIN, openedAt: row.OpenedAt}
}

// keepResetPIN reads again a session whose PIN staff replaced.
func keepResetPIN(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, c any) error {
	return s.keepSession(ctx, c.(resetPINCmd).SessionID)
}

// orderSession is loadSession for the order path: from the admission
// state when it is usable, else from the files.
func (s *Service) orderSession(id string) (store.Session, bool, error) {
	if s.admit != nil {
		if sess, ok := s.admit.session(s.node.FSM().Epoch(), id); ok {
			return sess, true, nil
		}
	}
	return s.loadSession(id)
}

// orderMenu is the menu at the catalog version (catalog.at) for the order
// path: the version from the admission state when it is usable and the
// cache holds that version, else both from the files.
func (s *Service) orderMenu() (map[string]store.MenuItem, error) {
	if s.admit != nil {
		if v, ok := s.admit.catalogVersion(s.node.FSM().Epoch()); ok {
			if menu, ok := s.catalog.cached(v); ok {
				return menu, nil
			}
		}
	}
	var menu map[string]store.MenuItem
	err := s.query(func(db store.DB) (err error) { menu, err = s.catalog.at(db); return })
	return menu, err
}
