package orders

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// admitState is everything the order's gate decides on, kept in this
// node's memory so that a guest order's Apply reads no SQL and no bbolt
// (issue 41): the active sessions and the catalog version, the KV windows
// the gate reads, what the orders' rows replay, stock levels, the ticket
// counter and the order ids in use. It is a cache of the files, never a
// second copy of the truth:
//
//   - built from the files (through the applying transaction, so at the
//     index being applied) the first time an order needs it, which is
//     after start, after a snapshot restore, and after the FSM dropped an
//     applied group or reopened its files (ApplyContext.Epoch changed);
//   - written through by the gate: the order's Apply changes the memory
//     and the files the same way, and the files are what they were
//     before the memory existed;
//   - kept by every other command that changes what it holds, in place
//     (sessions, stock, KV windows, catalog version, ticket day, freed
//     ids) or, for any command it does not know, dropped and built again
//     at the next order (observe).
//
// Answers never depend on whether the memory was kept or rebuilt: a
// rebuild reads only what can still answer (live windows, open replays),
// and entries past their end are pruned (prune), which no answer can see
// since FSM time never runs backwards. Iteration order of its maps never
// reaches a write or an answer: every walk that does is sorted.
//
// Only the apply path writes it (one Apply at a time, under the FSM's
// apply lock). The guest handler's checks before proposing read which
// order a key replays (keyReplay), the window records (recordWindows,
// recordBurstLocks), and the order gate's session and catalog version
// (admitsession.go) beside it: mu guards what those reads walk — the
// sessions map, each session's byKey and fields, records, catalogV,
// built and epoch — and only the apply path's writes to them take it
// (its own reads need not).
type admitState struct {
	mu    sync.RWMutex
	built bool
	epoch uint64 // ApplyContext.Epoch it was built at

	catalogV int64
	sessions map[string]*admitSession // active sessions
	windows  map[string]kvWindow      // the gate's KV keys (gateKey)
	// records is each phone's cooldown and each session's burst window
	// from version 6's records (windowrecords.go); mu guards it for the
	// receiving box's reads.
	records  windowRecords
	stock    map[string]int64 // tracked skus
	ticket   store.TicketCounter
	ids      map[int64]struct{} // order ids in use, live or archived
	printers []store.Printer    // printer ids and stations, as PrinterStations reads them (the kitchen tickets)
	// newestID is the id of the newest order applied here (0: none since
	// start), for the proposer's next candidate (orderids.go); Apply never
	// reads it.
	newestID atomic.Int64

	nextPrune int64 // FSM time of the next sweep of lapsed entries
	// rebuildAlways builds the memory again before every command (tests:
	// the answers and files must be the same as with it kept).
	rebuildAlways bool
}

// admitSession is an active session's table, PIN and opening time (the
// order gate's GetSession, admitsession.go) and what its orders' rows
// replay (store.FindReplays), by Idempotency-Key and by cart.
type admitSession struct {
	table  string
	byKey  map[string]rowReplay   // the newest order under the key whose key window was set
	byCart map[string][]rowReplay // by fingerprint, oldest first, cart windows set

	pin, openedAt string // the order gate's GetSession (admitsession.go)
}

// rowReplay is one order's row as a resend finds it: until is its
// KeyUntil in byKey and its CartUntil in byCart.
type rowReplay struct {
	store.Replayed
	seq, until int64
}

// kvWindow is one gate key of the coordination KV: its value and when it
// lapses (0: never), as kv.Tx judges it.
type kvWindow struct {
	value     []byte
	expiresAt int64
}

// gatePrefixes are the KV keys the gate reads (keys.go).
var gatePrefixes = []string{prefixIdem, prefixPayload, prefixBurst, prefixCooldown, prefixSessionLock}

func gateKey(key string) bool {
	for _, p := range gatePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// admitPruneEveryMs is how often (FSM time) lapsed entries are swept.
const admitPruneEveryMs = 10_000

// live reports whether the memory holds the files at ctx (else the next
// order builds it again, and keeping it now is pointless).
func (s *admitState) live(ctx *raftfsm.ApplyContext) bool { return s.heldAt(ctx.Epoch) }

// ready makes the memory hold the files at ctx, building it if needed.
func (s *admitState) ready(ctx *raftfsm.ApplyContext, tx *kv.Tx) error {
	if s.live(ctx) && !s.rebuildAlways {
		s.prune(ctx.Now)
		return nil
	}
	return s.rebuild(ctx, tx)
}

// drop forgets everything: the next order builds it again.
func (s *admitState) drop() {
	s.mu.Lock()
	s.built = false
	s.mu.Unlock()
}

// rebuild reads the memory from the files at ctx, through the applying
// transaction, so it may run in the middle of a group: every write the
// entries before it made must be readable there by then (a writer that
// defers rows to the group's commit must flush them before this reads).
func (s *admitState) rebuild(ctx *raftfsm.ApplyContext, tx *kv.Tx) error {
	s.drop()
	q := ctx.DB
	v, err := store.CatalogVersion(q)
	if err != nil {
		return err
	}
	active, err := store.ActiveSessions(q)
	if err != nil {
		return err
	}
	sessions := make(map[string]*admitSession, len(active))
	for _, a := range active {
		sessions[a.SessionID] = newAdmitSession(a)
	}
	replays, err := store.LiveReplays(q, ctx.Now)
	if err != nil {
		return err
	}
	for _, r := range replays { // oldest first: the newest wins byKey
		if sess := sessions[r.SessionID]; sess != nil {
			sess.add(r.Replayed, r.Seq, r.KeyUntil, r.CartUntil)
		}
	}
	stock, err := store.StockMap(q)
	if err != nil {
		return err
	}
	ticket, err := store.ReadTicketCounter(q)
	if err != nil {
		return err
	}
	idList, err := store.OrderIDs(q)
	if err != nil {
		return err
	}
	printers, err := store.PrinterStations(q)
	if err != nil {
		return err
	}
	ids := make(map[int64]struct{}, len(idList))
	for _, id := range idList {
		ids[id] = struct{}{}
	}
	s.catalogV, s.stock, s.ticket, s.ids, s.printers = v, stock, ticket, ids, printers
	s.windows = map[string]kvWindow{}
	s.reloadWindows(tx, gatePrefixes...)
	records := loadWindowRecords(tx)
	s.nextPrune = ctx.Now + admitPruneEveryMs
	s.mu.Lock()
	s.sessions, s.records, s.built, s.epoch = sessions, records, true, ctx.Epoch
	s.mu.Unlock()
	return nil
}

// add records an order's replay windows (0: shut).
func (a *admitSession) add(r store.Replayed, seq, keyUntil, cartUntil int64) {
	if keyUntil != 0 && r.RequestID != nil {
		if a.byKey == nil {
			a.byKey = map[string]rowReplay{}
		}
		a.byKey[*r.RequestID] = rowReplay{r, seq, keyUntil}
	}
	if cartUntil != 0 {
		if a.byCart == nil {
			a.byCart = map[string][]rowReplay{}
		}
		a.byCart[r.Fingerprint] = append(a.byCart[r.Fingerprint], rowReplay{r, seq, cartUntil})
	}
}

// addReplay records an admitted order's replay windows in its session
// (add), under mu: the guest handler may be reading the session's keys.
func (s *admitState) addReplay(sessionID string, r store.Replayed, seq, keyUntil, cartUntil int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.sessions[sessionID]; a != nil {
		a.add(r, seq, keyUntil, cartUntil)
	}
}

// heldAt reports whether the memory holds the files at epoch, the FSM's
// current one, for a read beside the apply path (the caller holds mu).
func (s *admitState) heldAt(epoch uint64) bool { return s.built && s.epoch == epoch }

// keyReplay is store.KeyReplay answered from memory for the guest
// handler's replay check (preadmit.go), beside the apply path; usable is
// false when the memory does not hold the files at epoch, the FSM's
// current one (not built yet, dropped, or the files were reopened), or
// the session is not active in it, and the caller reads the files
// instead. The memory may be ahead of the files by the entries of the
// FSM's open group: they are committed in Raft, so what they replay is
// final, and a key found nowhere is decided by Apply as before.
func (s *admitState) keyReplay(epoch uint64, sessionID, requestID string, now int64) (r store.Replayed, found, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.heldAt(epoch) {
		return r, false, false
	}
	a := s.sessions[sessionID]
	if a == nil {
		// Not active (here): its rows still name the key, and the check
		// answers a closed session's resend 410 itself.
		return r, false, false
	}
	r, found = a.liveKey(requestID, now)
	return r, found, true
}

// liveKey is the order a session's Idempotency-Key replays at now, while
// the key's window is open.
func (a *admitSession) liveKey(requestID string, now int64) (store.Replayed, bool) {
	if k, ok := a.byKey[requestID]; ok && requestID != "" && k.until > now {
		return k.Replayed, true
	}
	return store.Replayed{}, false
}

// replays is store.FindReplays answered from memory.
func (s *admitState) replays(sessionID, requestID, fingerprint string, now int64) store.Replays {
	var out store.Replays
	a := s.sessions[sessionID]
	if a == nil {
		return out
	}
	if requestID != "" {
		if r, ok := a.byKey[requestID]; ok && r.until > now {
			out.Key, out.KeyFound = r.Replayed, true
		}
	}
	list := a.byCart[fingerprint]
	for i := len(list) - 1; i >= 0; i-- { // the newest open one
		if list[i].until > now {
			out.Cart, out.CartFound = list[i].Replayed, true
			break
		}
	}
	return out
}

// prune drops what lapsed by FSM time now, every admitPruneEveryMs: no
// answer can see it again (FSM time never runs backwards).
func (s *admitState) prune(now int64) {
	if now < s.nextPrune {
		return
	}
	s.nextPrune = now + admitPruneEveryMs
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.windows { // deletions only: the order does not matter
		if w.expiresAt != 0 && w.expiresAt <= now {
			delete(s.windows, k)
		}
	}
	s.records.prune(now)
	for _, a := range s.sessions {
		for k, r := range a.byKey {
			if r.until <= now {
				delete(a.byKey, k)
			}
		}
		for fp, list := range a.byCart {
			kept := slices.DeleteFunc(list, func(r rowReplay) bool { return r.until <= now })
			if len(kept) == 0 {
				delete(a.byCart, fp)
			} else {
				a.byCart[fp] = kept
			}
		}
	}
}

// ---- the KV windows ----

// The windows change under mu (put, reloadWindows, prune) once the memory
// is built: the receiving box's gateLook reads them beside Apply.

// window is tx.Get for a gate key, from memory.
func (s *admitState) window(key string, now int64) (kv.Entry, bool) {
	w, ok := s.windows[key]
	if !ok || (w.expiresAt != 0 && w.expiresAt <= now) {
		return kv.Entry{}, false
	}
	return kv.Entry{Key: key, Value: w.value, ExpiresAt: w.expiresAt}, true
}

// put is tx.Put of a gate key, written through.
func (s *admitState) put(tx *kv.Tx, key string, value []byte, ttl time.Duration) error {
	if err := tx.Put(key, value, ttl); err != nil {
		return err
	}
	var exp int64
	if ttl > 0 {
		exp = tx.Now() + ttl.Milliseconds() // as kv.Tx.Put decides it
	}
	s.mu.Lock()
	s.windows[key] = kvWindow{value: value, expiresAt: exp}
	s.mu.Unlock()
	return nil
}

// reloadWindows reads again the gate keys under prefixes from the KV (a
// command that is not the gate's wrote them).
func (s *admitState) reloadWindows(tx *kv.Tx, prefixes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range prefixes {
		for k := range s.windows { // deletions only
			if strings.HasPrefix(k, p) {
				delete(s.windows, k)
			}
		}
		tx.Scan(p, func(e kv.Entry) bool {
			if gateKey(e.Key) {
				s.windows[e.Key] = kvWindow{value: e.Value, expiresAt: e.ExpiresAt}
			}
			return true
		})
	}
}

// ---- what other commands change ----

// observe hears of every applied command (raftfsm.Registry.OnApplied):
// one this memory does not know drops it. The gate's own commands and
// those wrapped by keepAdmit keep it themselves; the rest change none of
// it (admitNoEffect).
func (s *admitState) observe(ctx *raftfsm.ApplyContext, t raftfsm.CommandType) {
	if !s.live(ctx) || admitKept(t) || admitNoEffect[t] {
		return
	}
	if t == kv.CmdOp {
		// The KV's own writes (membership, deny list) never name a gate
		// key today; if one did, read them all again.
		s.reloadWindows(kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index), gatePrefixes...)
		return
	}
	s.drop()
}

// admitKept reports whether t keeps the memory itself: the order's own
// Apply, housekeeping (it tells the ids it freed) and the commands of
// admitKeepers.
func admitKept(t raftfsm.CommandType) bool {
	_, kept := admitKeepers[t]
	return kept || t == CmdPlaceOrder || t == CmdHousekeeping
}

// admitNoEffect are the commands that change nothing the gate reads:
// they write other tables and other KV keys (reading them is how this
// list was made; a command missing here drops the memory, which is slow,
// never wrong). kv.expire removes only lapsed keys, which no read sees.
var admitNoEffect = map[raftfsm.CommandType]bool{
	raftfsm.CmdFeatureLevel: true, kv.CmdExpire: true,
	CmdPINFailure: true, CmdRevokeToken: true, CmdLoginFailure: true,
	CmdOutboxSynced: true, CmdCloudState: true, CmdCloudSetting: true, CmdShopTimeZone: true, CmdRejectionSummary: true,
	CmdSetMenuImage: true, CmdSetCategoryNames: true, CmdSetClock: true,
	CmdPrintJob: true, CmdReprint: true, CmdPrinterState: true,
	CmdGuestCall: true, CmdCallDone: true, CmdBump: true,
}

// admitKeeper reads again, after its command applied, the part of the
// memory the command may have changed.
type admitKeeper func(s *admitState, ctx *raftfsm.ApplyContext, tx *kv.Tx, c any) error

// admitKeepers are the commands other than the order that change what
// the gate reads, and what each reads again (register wraps them).
var admitKeepers = map[raftfsm.CommandType]admitKeeper{
	CmdOpenSession: func(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, c any) error {
		return s.keepSession(ctx, c.(openSessionCmd).SessionID)
	},
	CmdResetPIN: keepResetPIN, // the order gate's PIN (admitsession.go)
	// The checkout lock (row 9).
	CmdCheckoutBegin: func(s *admitState, _ *raftfsm.ApplyContext, tx *kv.Tx, c any) error {
		s.reloadWindows(tx, keySessionLock(c.(checkoutCmd).SessionID))
		return nil
	},
	CmdCheckoutCancel: func(s *admitState, _ *raftfsm.ApplyContext, tx *kv.Tx, c any) error {
		s.reloadWindows(tx, keySessionLock(c.(checkoutCmd).SessionID))
		return nil
	},
	// Checkout closes the session and drops its keys.
	CmdCheckout: func(s *admitState, ctx *raftfsm.ApplyContext, tx *kv.Tx, c any) error {
		id := c.(checkoutCmd).SessionID
		s.reloadWindows(tx, append(sessionPrefixes(id), keySessionLock(id))...)
		return s.keepSession(ctx, id)
	},
	CmdSetStock: func(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, _ any) error { return s.keepStock(ctx) },
	// A cancel gives the order's stock back.
	CmdSetOrderStatus: func(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, c any) error {
		if c.(setOrderStatusCmd).Status != store.StatusCancelled {
			return nil
		}
		return s.keepStock(ctx)
	},
	// The locks API deletes a checkout lock or a burst window.
	CmdForceRelease: func(s *admitState, _ *raftfsm.ApplyContext, tx *kv.Tx, c any) error {
		s.reloadWindows(tx, c.(forceReleaseCmd).Key)
		return nil
	},
	// Menu writes move the catalog version (the pricing cache's key).
	CmdUpsertMenu: keepCatalogVersion,
	CmdImportMenu: keepCatalogVersion,
	// An order's kitchen tickets go to the printers' stations.
	CmdPutPrinter:    keepPrinters,
	CmdDeletePrinter: keepPrinters,
	// A day close starts the ticket numbers again.
	CmdCloseDay: func(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, _ any) error {
		t, err := store.ReadTicketCounter(ctx.DB)
		s.ticket = t
		return err
	},
}

func keepPrinters(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, _ any) error {
	p, err := store.PrinterStations(ctx.DB)
	s.printers = p
	return err
}

func keepCatalogVersion(s *admitState, ctx *raftfsm.ApplyContext, _ *kv.Tx, _ any) error {
	v, err := store.CatalogVersion(ctx.DB)
	s.mu.Lock()
	s.catalogV = v
	s.mu.Unlock()
	return err
}

// keptBy wraps the handler of t when t has an admitKeeper.
func keptBy[T command](s *admitState, t raftfsm.CommandType, apply applyFunc[T]) applyFunc[T] {
	keep := admitKeepers[t]
	if s == nil || keep == nil {
		return apply
	}
	return func(ctx *raftfsm.ApplyContext, tx *kv.Tx, c T) ([]byte, error) {
		out, err := apply(ctx, tx, c)
		if err != nil || !s.live(ctx) {
			return out, err
		}
		if err := keep(s, ctx, tx, c); err != nil {
			return nil, fmt.Errorf("keep the admission state: %w", err)
		}
		return out, nil
	}
}

// freed forgets order ids housekeeping pruned from the archive.
func (s *admitState) freed(ctx *raftfsm.ApplyContext, ids []int64) {
	if !s.live(ctx) {
		return
	}
	for _, id := range ids {
		delete(s.ids, id)
	}
}

// keepSession reads one session again: opened, its PIN replaced, or
// closed (then what its rows replay is dropped with it: a closed
// session's orders are never replayed, checkSession answers first).
func (s *admitState) keepSession(ctx *raftfsm.ApplyContext, id string) error {
	row, found, err := store.GetSession(ctx.DB, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !found || row.Status != store.SessionActive {
		delete(s.sessions, id)
		return nil
	}
	if a := s.sessions[id]; a != nil {
		a.table, a.pin, a.openedAt = row.TableID, row.PIN, row.OpenedAt
		return nil
	}
	s.sessions[id] = newAdmitSession(row)
	return nil
}

// keepStock reads the stock levels again (a stock write or a cancel that
// gave stock back).
func (s *admitState) keepStock(ctx *raftfsm.ApplyContext) error {
	stock, err := store.StockMap(ctx.DB)
	if err != nil {
		return err
	}
	s.stock = stock
	return nil
}

// ---- stock and ids ----

// short is the tracked skus among need with fewer units than asked, in
// need's order (shortSKUs from memory).
func (s *admitState) short(need []skuUnits) []string {
	var short []string
	for _, u := range need {
		if qty, tracked := s.stock[u.sku]; tracked && qty < u.n {
			short = append(short, u.sku)
		}
	}
	return short
}

// takeStock takes need's tracked units (distinct skus, as unitsPerSKU
// makes them) in memory, and queues each new level for the files
// (store.QueueStockLevel): the memory holds the files' levels, so the
// level it sets is what quantity - n leaves, and the orders of one group
// that take a sku cost one UPDATE of it at the group's commit, or before
// anything reads stock (raftfsm/bulk.go). The caller checked short
// first: a level below zero means the memory is out of step.
func (s *admitState) takeStock(ctx *raftfsm.ApplyContext, need []skuUnits) error {
	for _, u := range need {
		if qty, tracked := s.stock[u.sku]; tracked && qty < u.n {
			return fmt.Errorf("admission state out of step with the files: stock of %s is %d, %d taken", u.sku, qty, u.n)
		}
	}
	for _, u := range need {
		qty, tracked := s.stock[u.sku]
		if !tracked {
			continue
		}
		qty -= u.n
		if err := store.QueueStockLevel(ctx.DB, u.sku, qty); err != nil {
			return err
		}
		s.stock[u.sku] = qty
	}
	return nil
}

// freeID is the first id from candidate on (wrapping at 2^31-1) that no
// order, live or archived, holds: insertOrder's walk, from memory.
func (s *admitState) freeID(ctx *raftfsm.ApplyContext, candidate int64) (int64, error) {
	id := candidate
	if id < 1 || id > maxOrderID {
		id = int64(ctx.Index%maxOrderID) + 1
	}
	for i := 0; i < 1_000_000; i++ {
		if _, taken := s.ids[id]; !taken {
			return id, nil
		}
		id = id%maxOrderID + 1
	}
	return 0, errOrderIDsExhausted
}
