package orders

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// A guest's cooldown after a success (row 8) is keyed by the phone and
// the session's burst window (row 10) by the session: before version 6
// of placeOrder, KV keys `cooldown:{clientId}` and `burst:{sessionId}`,
// each put on a random page of the KV's bbolt by nearly every order
// (every phone is new to it, and a busy store has many sessions). Version
// 6 writes both as one record named by the order's own Raft index,
// `windows:{index, 16 hex digits}`, with the longer window as its TTL:
// records append to the KV's last page, and the KV's expiry removes them
// as it removed the keys. The admission state reads them into memory (by
// client and by session), and the gate asks both: an old key (an order of
// an older version) or a record, and refuses with the later end.
//
// Each phone's and each session's window is the latest end among its
// records, in memory and when read back from the files alike, so which
// lapsed records the expiry already removed never changes an answer (a
// lapsed end cannot be the latest live one). The locks API's release of
// a session's burst window (forceRelease version 3) writes a release
// record, which clears the session's end at its index; its TTL is the end
// it clears, so it outlives every record it cancels.
const (
	prefixWindowRecord = "windows:"
	// placeWindowRecordVersion is the first placeOrder version that
	// writes window records.
	placeWindowRecordVersion = 6
	// forceReleaseRecordVersion is the first forceRelease version that
	// releases a burst window held in a record.
	forceReleaseRecordVersion = 3
	// burstReleased is a record's burst end that clears the session's.
	burstReleased = -1
)

func keyWindowRecord(index uint64) string {
	return fmt.Sprintf("%s%016x", prefixWindowRecord, index)
}

// windowRecord is one record: the phone's cooldown end and the session's
// burst end it sets (0: none; burstReleased: cleared).
type windowRecord struct {
	client      string
	cooldownEnd int64
	session     string
	burstEnd    int64
}

func (r windowRecord) encode() []byte {
	b := make([]byte, 0, 4*binary.MaxVarintLen64+len(r.client)+len(r.session))
	b = binary.AppendVarint(appendString(b, r.client), r.cooldownEnd)
	return binary.AppendVarint(appendString(b, r.session), r.burstEnd)
}

// shown is a record as the locks listing shows it (FSM milliseconds).
func (r windowRecord) shown() map[string]any {
	return map[string]any{"clientId": r.client, "cooldownEnd": r.cooldownEnd, "sessionId": r.session, "burstEnd": r.burstEnd}
}

func decodeWindowRecord(b []byte) (r windowRecord, ok bool) {
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	num := func() (int64, bool) {
		v, k := binary.Varint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	var good [4]bool
	r.client, good[0] = str()
	r.cooldownEnd, good[1] = num()
	r.session, good[2] = str()
	r.burstEnd, good[3] = num()
	return r, good == [4]bool{true, true, true, true} && len(b) == 0
}

// recordEnd is a window's latest end among its records, and the index of
// the record that set it (the locks listing's revision).
type recordEnd struct {
	end   int64
	index uint64
}

// windowRecords is what the records say: each phone's cooldown and each
// session's burst window.
type windowRecords struct {
	cooldowns map[string]recordEnd
	bursts    map[string]recordEnd
}

func newWindowRecords() windowRecords {
	return windowRecords{cooldowns: map[string]recordEnd{}, bursts: map[string]recordEnd{}}
}

// add applies one record, written at index; records are added in index
// order (as applied, and as a scan of their keys reads them).
func (w windowRecords) add(r windowRecord, index uint64) {
	later := func(m map[string]recordEnd, id string, end int64) {
		if cur, ok := m[id]; !ok || end >= cur.end {
			m[id] = recordEnd{end, index}
		}
	}
	if r.client != "" && r.cooldownEnd != 0 {
		later(w.cooldowns, r.client, r.cooldownEnd)
	}
	switch {
	case r.session == "" || r.burstEnd == 0:
	case r.burstEnd == burstReleased:
		delete(w.bursts, r.session)
	default:
		later(w.bursts, r.session, r.burstEnd)
	}
}

// prune drops lapsed ends.
func (w windowRecords) prune(now int64) {
	for _, m := range []map[string]recordEnd{w.cooldowns, w.bursts} {
		for id, e := range m { // deletions only
			if e.end <= now {
				delete(m, id)
			}
		}
	}
}

// loadWindowRecords reads the live records (rebuild, and the locks
// listing while the memory is being built).
func loadWindowRecords(tx *kv.Tx) windowRecords {
	w := newWindowRecords()
	tx.Scan(prefixWindowRecord, func(e kv.Entry) bool {
		index, err := strconv.ParseUint(strings.TrimPrefix(e.Key, prefixWindowRecord), 16, 64)
		if r, ok := decodeWindowRecord(e.Value); ok && err == nil {
			w.add(r, index)
		}
		return true
	})
	return w
}

// startWindowRecord writes a version 6 order's record and keeps it in
// memory (the caller checked that one of the windows is set).
func (s *admitState) startWindowRecord(ctx *raftfsm.ApplyContext, tx *kv.Tx, clientID string, cooldownMs int64, sessionID string, burstMs int64) error {
	now := tx.Now()
	r := windowRecord{client: clientID, session: sessionID}
	if cooldownMs > 0 {
		r.cooldownEnd = now + msDuration(cooldownMs).Milliseconds()
	}
	if burstMs > 0 {
		r.burstEnd = now + msDuration(burstMs).Milliseconds()
	}
	return s.putWindowRecord(ctx, tx, r, max(r.cooldownEnd, r.burstEnd)-now)
}

// releaseBurstRecord clears sessionID's burst window held in records
// (forceRelease 3): found is false when none is live.
func (s *admitState) releaseBurstRecord(ctx *raftfsm.ApplyContext, tx *kv.Tx, sessionID string) (index uint64, found bool, err error) {
	e, live := s.recordBurst(sessionID, tx.Now())
	if !live {
		return 0, false, nil
	}
	r := windowRecord{session: sessionID, burstEnd: burstReleased}
	return e.index, true, s.putWindowRecord(ctx, tx, r, e.end-tx.Now())
}

func (s *admitState) putWindowRecord(ctx *raftfsm.ApplyContext, tx *kv.Tx, r windowRecord, ttlMs int64) error {
	if err := tx.Put(keyWindowRecord(ctx.Index), r.encode(), time.Duration(ttlMs)*time.Millisecond); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records.add(r, ctx.Index)
	return nil
}

// laterEnd is the window of an old key (e, live) and a record's end
// together: live if either is, ending at the later end (0: never).
func laterEnd(e kv.Entry, live bool, rec recordEnd, recLive bool) (end int64, ok bool) {
	switch {
	case live && (!recLive || e.ExpiresAt == 0 || e.ExpiresAt >= rec.end):
		return e.ExpiresAt, true
	case recLive:
		return rec.end, true
	}
	return 0, false
}

func (s *admitState) recordCooldown(clientID string, now int64) (recordEnd, bool) {
	e, ok := s.records.cooldowns[clientID]
	return e, ok && e.end > now
}

func (s *admitState) recordBurst(sessionID string, now int64) (recordEnd, bool) {
	e, ok := s.records.bursts[sessionID]
	return e, ok && e.end > now
}

// cooldown is row 8's window for clientID at now, from memory.
func (s *admitState) cooldown(clientID string, now int64) (end int64, live bool) {
	e, ok := s.window(keyCooldown(clientID), now)
	rec, recOK := s.recordCooldown(clientID, now)
	return laterEnd(e, ok, rec, recOK)
}

// burst is row 10's window for sessionID at now, from memory.
func (s *admitState) burst(sessionID string, now int64) (end int64, live bool) {
	e, ok := s.window(keyBurst(sessionID), now)
	rec, recOK := s.recordBurst(sessionID, now)
	return laterEnd(e, ok, rec, recOK)
}

// recordWindows answers, for the receiving box's checks before proposing
// (preadmit.go) beside the apply path, the records' cooldown of clientID
// and burst window of sessionID at now; usable is false when the memory
// does not hold the files at epoch, and the caller leaves the records to
// Apply.
func (s *admitState) recordWindows(epoch uint64, clientID, sessionID string, now int64) (cooldown, burst recordEnd, cooldownLive, burstLive, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.heldAt(epoch) {
		return
	}
	cooldown, cooldownLive = s.recordCooldown(clientID, now)
	burst, burstLive = s.recordBurst(sessionID, now)
	return cooldown, burst, cooldownLive, burstLive, true
}

// gateLook is what the receiving box's checks before proposing
// (preadmit.go) read of the gate at now: an Idempotency-Key's result
// cached as a KV key (an order of version 4 or older) or kept in its
// order's row (version 5 or later), and the first of rows 8–10 that
// refuses (reason "" for none).
type gateLook struct {
	now       int64
	idem      []byte
	idemFound bool
	row       store.Replayed
	rowFound  bool
	status    int
	reason    string
	waitMs    int64
}

// gateLook answers it from memory, which holds every gate key as the KV
// does (written through), the window records and the active sessions'
// keys, in one view under the read lock; usable is false when the memory
// does not hold the files at epoch or the session is not active in it,
// and the caller reads the KV and the rows instead. The memory may be
// ahead of the files by the FSM's open group: those entries are
// committed in Raft, so what they hold is final, and the keys and the
// windows are read at the same point (a key found ahead is never judged
// against windows of its own order without it).
func (s *admitState) gateLook(epoch uint64, cmd placeOrderCmd, now int64) (g gateLook, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a := s.sessions[cmd.SessionID]
	if !s.heldAt(epoch) || a == nil {
		return g, false
	}
	g.now = now
	if e, live := s.window(keyIdem(cmd.SessionID, cmd.RequestID), now); live {
		g.idem, g.idemFound = e.Value, true
	}
	g.row, g.rowFound = a.liveKey(cmd.RequestID, now)
	if end, live := s.cooldown(cmd.ClientID, now); live {
		g.status, g.reason, g.waitMs = http.StatusTooManyRequests, "COOLDOWN_ACTIVE", end-now
	} else if e, live := s.window(keySessionLock(cmd.SessionID), now); live {
		g.status, g.reason, g.waitMs = http.StatusConflict, "SESSION_BUSY", min(e.ExpiresAt-now, 5000)
	} else if end, live := s.burst(cmd.SessionID, now); live {
		g.status, g.reason, g.waitMs = http.StatusConflict, "SESSION_ORDER_IN_PROGRESS", end-now
	}
	return g, true
}

// burstLocks is the sessions whose burst window a record holds at now,
// as the locks listing shows them (key burst:{session}), sorted by key.
func (w windowRecords) burstLocks(now int64) []kv.Entry {
	var out []kv.Entry
	for id, e := range w.bursts {
		if e.end > now {
			out = append(out, kv.Entry{Key: keyBurst(id), ExpiresAt: e.end, Revision: e.index})
		}
	}
	slices.SortFunc(out, func(a, b kv.Entry) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// recordBurstLocks is burstLocks from memory when it holds the files at
// epoch (usable false otherwise).
func (s *admitState) recordBurstLocks(epoch uint64, now int64) (locks []kv.Entry, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.heldAt(epoch) {
		return nil, false
	}
	return s.records.burstLocks(now), true
}
