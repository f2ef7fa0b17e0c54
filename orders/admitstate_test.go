package orders

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// The admission state (admitstate.go) is a cache of the files: with it
// kept command by command, and with it built again from the files before
// every command, the answers and the files must be the same; the memory
// kept must equal one built from the files after every batch; a snapshot
// restore and a restart over older files must build it again.

// admitRegistry is the node's dispatch table with st as its admission
// state.
func admitRegistry(st *admitState) *raftfsm.Registry {
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	registerTable(commandTable{reg: reg, maxVersion: versionOf, admit: st})
	registerLevels(reg, featureLevels)
	return reg
}

func admitOpen(t *testing.T, dir string, st *admitState, g raftfsm.Grouping) *raftfsm.FSM {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: admitRegistry(st), Migrate: store.Migrate,
		Logger: slog.New(slog.DiscardHandler), Grouping: g})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// admitGen makes a random but valid command log that meets every row of
// the gate and every command that changes what it reads.
type admitGen struct {
	r        *rand.Rand
	index    uint64
	now      int64
	sessions []string // opened so far (some closed since)
	nextSess int
	clients  []string
	keys     []string
	orders   []int64 // ids answered so far
	step     int64   // FSM ms between entries (0: random, up to 1.5 s)
}

func newAdmitGen(seed uint64) *admitGen {
	g := &admitGen{r: rand.New(rand.NewPCG(seed, 41)), now: fzFSMTime}
	for i := range 4 {
		g.clients = append(g.clients, fmt.Sprintf("guest-admitclient%02d", i))
	}
	for i := range 6 {
		g.keys = append(g.keys, fmt.Sprintf("550e8400-e29b-41d4-a716-4466554400%02d", i))
	}
	return g
}

func (g *admitGen) entry(t raftfsm.CommandType, v uint8, payload any) *raft.Log {
	g.index++
	if g.step > 0 {
		g.now += g.step
	} else {
		g.now += int64(g.r.IntN(1500))
	}
	var p []byte
	switch pv := payload.(type) {
	case []byte:
		p = pv
	default:
		b, err := encodeCommand(pv, v)
		if err != nil {
			panic(err)
		}
		p = b
	}
	cmd := raftfsm.Command{Type: t, Version: v, FSMTime: g.now, WallTime: g.now, Payload: p}
	return &raft.Log{Index: g.index, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}
}

func (g *admitGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *admitGen) qty(n int) *int64 { v := int64(g.r.IntN(n)); return &v }

// setup is the menu, stock and first sessions.
func (g *admitGen) setup() []*raft.Log {
	ramen := store.MenuItem{MenuID: "ramen", Name: "醤油ラーメン", Price: 900, Available: true,
		Toppings: []store.Topping{{ToppingID: "egg", Name: "味玉", Price: 120}, {ToppingID: "nori", Name: "海苔", Price: 80}}}
	tea := store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: true, Toppings: []store.Topping{}}
	out := []*raft.Log{
		g.entry(CmdUpsertMenu, versionOf(CmdUpsertMenu), upsertMenuCmd{Item: ramen}),
		g.entry(CmdUpsertMenu, versionOf(CmdUpsertMenu), upsertMenuCmd{Item: tea}),
		g.entry(CmdSetStock, versionOf(CmdSetStock), setStockCmd{SKU: "egg", Quantity: g.qty(8)}),
	}
	for range 3 {
		out = append(out, g.open())
	}
	return out
}

func (g *admitGen) open() *raft.Log {
	g.nextSess++
	id := fmt.Sprintf("S%022d", g.nextSess)
	g.sessions = append(g.sessions, id)
	pin := fmt.Sprintf("%04d", g.nextSess*7919%10000) // the order gate's PIN check reads it from memory
	return g.entry(CmdOpenSession, 1, openSessionCmd{SessionID: id, TableID: fmt.Sprintf("T%d", g.nextSess), PIN: pin})
}

func (g *admitGen) session() string {
	if len(g.sessions) > 4 && g.r.IntN(4) > 0 {
		return g.sessions[len(g.sessions)-1-g.r.IntN(4)] // mostly recent ones
	}
	return g.pick(g.sessions)
}

var admitCarts = [][]admission.Line{
	{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}}},
	{{MenuID: "tea", Quantity: 2}},
	{{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg", "nori"}}, {MenuID: "tea", Quantity: 1}},
	{{MenuID: "nori", Quantity: 1}}, // unknown item: INVALID_ORDER
}

func (g *admitGen) order() *raft.Log {
	sess := g.session()
	cart := admitCarts[g.r.IntN(len(admitCarts))]
	if g.r.IntN(3) == 0 {
		cart = admitCarts[g.r.IntN(2)] // the same few carts again: their windows
	}
	lines := admission.Normalize(cart)
	c := placeOrderCmd{SessionID: sess, Source: "guest", Node: "a", Items: lines, Fingerprint: admission.Fingerprint(sess, lines),
		ClientID: g.pick(g.clients), RequestID: g.pick(g.keys), CandidateID: int64(g.r.IntN(40)),
		Windows: Windows{CooldownMs: []int64{0, 500, 3000}[g.r.IntN(3)], BurstMs: []int64{0, 1000}[g.r.IntN(2)],
			PayloadMs: []int64{0, 4000, 30000}[g.r.IntN(3)], IdempotencyMs: []int64{0, 8000, 3_600_000}[g.r.IntN(3)]},
		AllowRepeat: g.r.IntN(5) == 0, Attempt: fmt.Sprintf("a%d", g.r.IntN(3))}
	if g.r.IntN(6) == 0 {
		c.Source, c.ClientID = "staff", ""
		if g.r.IntN(2) == 0 {
			c.RequestID = ""
		}
	}
	if g.r.IntN(5) == 0 {
		total := int64(1020)
		c.ExpectedTotal = &total
	}
	v := uint8(3 + g.r.IntN(4)) // 3–6: windows in the KV, binary, in the row, the cooldown as a record
	if g.r.IntN(10) == 0 {
		v = uint8(1 + g.r.IntN(2))
	}
	return g.entry(CmdPlaceOrder, v, c)
}

// next is one random command, orders most of the time.
func (g *admitGen) next() *raft.Log {
	switch n := g.r.IntN(100); {
	case n < 55:
		return g.order()
	case n < 60:
		return g.open()
	case n < 64:
		skus := []string{"ramen", "egg", "tea", "nori"}
		var q *int64
		if g.r.IntN(4) > 0 {
			q = g.qty(40)
		}
		return g.entry(CmdSetStock, versionOf(CmdSetStock), setStockCmd{SKU: g.pick(skus), Quantity: q})
	case n < 70 && len(g.orders) > 0:
		id := g.orders[g.r.IntN(len(g.orders))]
		st := []string{store.StatusCancelled, store.StatusCooking, store.StatusServed}[g.r.IntN(3)]
		return g.entry(CmdSetOrderStatus, versionOf(CmdSetOrderStatus), setOrderStatusCmd{OrderID: id, Status: st, Node: "a"})
	case n < 74:
		return g.entry(CmdCheckoutBegin, versionOf(CmdCheckoutBegin), checkoutCmd{SessionID: g.session(), LockTTLms: 3000, Node: "a"})
	case n < 76:
		return g.entry(CmdCheckoutCancel, versionOf(CmdCheckoutCancel), checkoutCmd{SessionID: g.session(), Node: "a"})
	case n < 80:
		return g.entry(CmdCheckout, versionOf(CmdCheckout), checkoutCmd{SessionID: g.session(), Node: "a", Payment: "cash"})
	case n < 83:
		key := []string{keyBurst(g.session()), keySessionLock(g.session()), keyCooldown(g.pick(g.clients))}[g.r.IntN(3)]
		return g.entry(CmdForceRelease, uint8(1+g.r.IntN(3)), forceReleaseCmd{Key: key, Node: "a"})
	case n < 86:
		return g.entry(CmdHousekeeping, 1, housekeepingCmd{Limit: 3, ArchiveKeepMs: 5000, AuditKeepMs: 5000})
	case n < 88:
		return g.entry(CmdCloseDay, 1, closeDayCmd{Label: "2026-12-06", Force: true})
	case n < 91:
		// The KV's own command on a gate key: never proposed today, but
		// the memory must follow it.
		key := []string{keyCooldown(g.pick(g.clients)), keyBurst(g.session()), keySessionLock(g.session())}[g.r.IntN(3)]
		op := map[string]any{"op": "put", "key": key, "ttlMs": 2000}
		if g.r.IntN(2) == 0 {
			op = map[string]any{"op": "delete", "key": key}
		}
		return g.entry(kv.CmdOp, 1, op)
	case n < 93:
		return g.entry(kv.CmdExpire, 1, map[string]any{"limit": 100})
	case n < 95:
		price := int64(900 + 10*g.r.IntN(3))
		ramen := store.MenuItem{MenuID: "ramen", Name: "醤油ラーメン", Price: price, Available: g.r.IntN(8) > 0,
			Toppings: []store.Topping{{ToppingID: "egg", Name: "味玉", Price: 120}, {ToppingID: "nori", Name: "海苔", Price: 80}}}
		return g.entry(CmdUpsertMenu, versionOf(CmdUpsertMenu), upsertMenuCmd{Item: ramen})
	case n < 97:
		if g.r.IntN(2) == 0 { // staff's new PIN: the order gate's session (admitsession.go)
			return g.entry(CmdResetPIN, versionOf(CmdResetPIN), resetPINCmd{SessionID: g.session(), PIN: fmt.Sprintf("%04d", g.r.IntN(10000)), Node: "a"})
		}
		return g.entry(CmdPINFailure, 1, pinFailureCmd{SessionID: g.session(), Client: g.pick(g.clients), Node: "a"})
	case n < 99:
		// The kitchen printers an order's tickets go to, and their jobs.
		id := []string{"p1", "p2"}[g.r.IntN(2)]
		if g.r.IntN(3) == 0 {
			return g.entry(CmdDeletePrinter, versionOf(CmdDeletePrinter), printerIDCmd{PrinterID: id})
		}
		if g.r.IntN(3) == 0 {
			// A ticket printed: the newest jobs go first, so a box that
			// numbered its jobs from max(rowid) after a restore differs.
			step := []string{printBegin, printDone, printDone}[g.r.IntN(3)]
			return g.entry(CmdPrintJob, versionOf(CmdPrintJob), printJobCmd{JobID: int64(1 + g.r.IntN(60)), Step: step})
		}
		st := [][]string{{defaultStation}, {"drinks"}, {defaultStation, "drinks"}}[g.r.IntN(3)]
		return g.entry(CmdPutPrinter, versionOf(CmdPutPrinter), putPrinterCmd{Printer: store.Printer{PrinterID: id, Name: "Kitchen " + id, Addr: "192.0.2.10:9100", Stations: st}})
	default:
		return g.order()
	}
}

// answer is one entry's response, comparable.
func admitAnswer(r interface{}) string {
	res, ok := r.(raftfsm.Response)
	if !ok {
		return fmt.Sprintf("%T", r)
	}
	if res.Err != nil {
		return "error: " + res.Err.Error()
	}
	return string(res.Data)
}

func admitDump(t *testing.T, f *raftfsm.FSM) []byte {
	t.Helper()
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.Dump(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkKeyReplays compares, with f's files committed (an FSM that
// commits every batch), the memory's keyReplay with store.KeyReplay for
// every session and key the log uses.
func checkKeyReplays(t *testing.T, st *admitState, f *raftfsm.FSM, g *admitGen) {
	t.Helper()
	now := f.Now()
	for _, sid := range g.sessions {
		for _, key := range g.keys {
			got, found, usable := st.keyReplay(f.Epoch(), sid, key, now)
			if !usable {
				continue // dropped, or the session is not active: the files answer
			}
			var want store.Replayed
			var wantFound bool
			if err := f.Query(func(db *sql.DB) error {
				var err error
				want, wantFound, err = store.KeyReplay(db, sid, key, now)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if found != wantFound || !reflect.DeepEqual(got, want) {
				t.Fatalf("after index %d, session %s key %s: memory %v %+v, files %v %+v", g.index, sid, key, found, got, wantFound, want)
			}
		}
	}
}

// checkGateSessions compares, with f's files committed, the order gate's
// session lookup and catalog version from memory (admitsession.go) with
// the files' for every session the log opened and one never opened; it
// returns how many sessions memory answered.
func checkGateSessions(t *testing.T, st *admitState, f *raftfsm.FSM, g *admitGen) (usable int) {
	t.Helper()
	for _, sid := range append(g.sessions, fmt.Sprintf("S%022d", 0)) {
		got, ok := st.session(f.Epoch(), sid)
		var want store.Session
		var found bool
		if err := f.Query(func(db *sql.DB) error {
			var err error
			want, found, err = store.GetSession(db, sid)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		active := found && want.Status == store.SessionActive
		if ok != (active && st.live(&raftfsm.ApplyContext{Epoch: f.Epoch()})) {
			t.Fatalf("after index %d, session %s: memory usable %v, files %v %+v", g.index, sid, ok, found, want)
		}
		if ok && got != want {
			t.Fatalf("after index %d, session %s: memory %+v, files %+v", g.index, sid, got, want)
		}
		if ok {
			usable++
		}
	}
	if v, ok := st.catalogVersion(f.Epoch()); ok {
		var want int64
		if err := f.Query(func(db *sql.DB) error { var err error; want, err = store.CatalogVersion(db); return err }); err != nil {
			t.Fatal(err)
		}
		if v != want {
			t.Fatalf("after index %d: catalog version %d in memory, %d in the files", g.index, v, want)
		}
	}
	return usable
}

// checkGateLooks compares the receiving box's look at the gate's windows
// (gateLook) from the memory kept with the memory built from the files,
// for every session the log opened, each phone and a key.
func checkGateLooks(t *testing.T, kept, files *admitState, epoch uint64, g *admitGen, now int64) {
	t.Helper()
	for _, sid := range g.sessions {
		for i, client := range g.clients {
			cmd := placeOrderCmd{SessionID: sid, ClientID: client, RequestID: g.keys[i%len(g.keys)]}
			got, ok := kept.gateLook(epoch, cmd, now)
			want, wantOK := files.gateLook(1, cmd, now)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("after index %d, %+v: memory %v %+v, files %+v", g.index, cmd, ok, got, want)
			}
		}
	}
}

// admitSequences is the FSM's AUTOINCREMENT counters (sqlite_sequence):
// the next print job's or call's number.
func admitSequences(t *testing.T, f *raftfsm.FSM) string {
	t.Helper()
	var out []string
	err := f.Query(func(db *sql.DB) error {
		var err error
		out, err = rowsText(db, `SELECT name, seq FROM sqlite_sequence ORDER BY name`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// admitView is an admission state normalized for comparing: what lapsed
// by now pruned, empty maps nil.
type admitView struct {
	CatalogV int64
	Sessions map[string]admitSessionView
	Windows  map[string]kvWindow
	Stock    map[string]int64
	Ticket   store.TicketCounter
	IDs      map[int64]struct{}
	Printers []store.Printer
}

type admitSessionView struct {
	Table, PIN, OpenedAt string
	ByKey                map[string]rowReplay
	ByCart               map[string][]rowReplay
}

func (s *admitState) view(now int64) admitView {
	s.nextPrune = 0
	s.prune(now)
	v := admitView{CatalogV: s.catalogV, Sessions: map[string]admitSessionView{}, Windows: map[string]kvWindow{},
		Stock: s.stock, Ticket: s.ticket, IDs: s.ids, Printers: s.printers}
	for id, a := range s.sessions {
		sv := admitSessionView{Table: a.table, PIN: a.pin, OpenedAt: a.openedAt}
		if len(a.byKey) > 0 {
			sv.ByKey = a.byKey
		}
		if len(a.byCart) > 0 {
			sv.ByCart = a.byCart
		}
		v.Sessions[id] = sv
	}
	for k, w := range s.windows {
		if len(w.value) == 0 {
			w.value = nil
		}
		v.Windows[k] = w
	}
	return v
}

// fromFiles builds an admission state from f's committed files.
func fromFiles(t *testing.T, f *raftfsm.FSM) *admitState {
	t.Helper()
	st := &admitState{}
	err := f.View(func(btx *bolt.Tx) error {
		return f.Query(func(db *sql.DB) error {
			ctx := &raftfsm.ApplyContext{Now: f.Now(), Bolt: btx, DB: db, Epoch: 1}
			return st.rebuild(ctx, kv.NewTx(btx, f.Now(), 0))
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestAdmitStateGivesTheAnswersAndFilesOfARebuildBeforeEveryCommand(t *testing.T) {
	for _, seed := range []uint64{7, 19, 3} { // 3: its snapshot falls after the newest print jobs were printed
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { admitAgainstRebuild(t, seed) })
	}
}

func admitAgainstRebuild(t *testing.T, seed uint64) {
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	g := newAdmitGen(seed)
	kept, always, grouped := &admitState{}, &admitState{rebuildAlways: true}, &admitState{}
	dirKept, dirGrouped := t.TempDir(), t.TempDir()
	fKept := admitOpen(t, dirKept, kept, raftfsm.Grouping{})
	fAlways := admitOpen(t, t.TempDir(), always, raftfsm.Grouping{})
	fGrouped := admitOpen(t, dirGrouped, grouped, raftfsm.Grouping{Delay: time.Hour, Entries: 13})
	defer func() { fKept.Close(); fAlways.Close(); fGrouped.Close() }()

	var log []*raft.Log
	answers := map[uint64]string{}
	apply := func(f *raftfsm.FSM, name string, batch []*raft.Log) {
		t.Helper()
		for i, r := range f.ApplyBatch(batch) {
			a := admitAnswer(r)
			idx := batch[i].Index
			if want, seen := answers[idx]; seen && a != want {
				t.Fatalf("index %d on %s answered\n%s\nnot\n%s", idx, name, a, want)
			}
			answers[idx] = a
		}
	}
	runAll := func(batch []*raft.Log) {
		log = append(log, batch...)
		apply(fAlways, "rebuilt before every command", batch)
		apply(fKept, "kept", batch)
		apply(fGrouped, "kept, grouped", batch)
		for i, e := range batch {
			cmd, _ := raftfsm.Decode(e.Data)
			if cmd.Type != CmdPlaceOrder {
				continue
			}
			var res Result
			if json.Unmarshal([]byte(answers[e.Index]), &res) == nil && res.Status == 200 && !res.Replay {
				var body successBody
				if json.Unmarshal(res.Body, &body) == nil && body.OrderID != 0 {
					g.orders = append(g.orders, body.OrderID)
				}
			}
			_ = i
		}
	}
	runAll(g.setup())
	// The guest handlers read which order a key replays beside the apply
	// path (the race detector judges the locking).
	stopReaders, key0, client0 := make(chan struct{}), g.keys[0], g.clients[0]
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				for i := 1; i <= 80; i++ { // the ids open() gives, not g's list (the test's goroutine appends to it)
					grouped.keyReplay(fGrouped.Epoch(), fmt.Sprintf("S%022d", i), key0, fGrouped.Now())
					grouped.session(fGrouped.Epoch(), fmt.Sprintf("S%022d", i)) // the order gate's
				}
				grouped.catalogVersion(fGrouped.Epoch())
				grouped.gateLook(fGrouped.Epoch(), placeOrderCmd{SessionID: fmt.Sprintf("S%022d", 1), ClientID: client0, RequestID: key0}, fGrouped.Now())
			}
		}()
	}
	defer func() { close(stopReaders); readers.Wait() }()

	var snap bytes.Buffer
	var snapAt uint64
	var filesAt string // a copy of the kept FSM's files at snapAt
	outcomes := map[string]int{}
	gateAnswered := 0 // sessions the order gate's lookup found in memory
	for step := 0; step < steps; {
		n := 1 + g.r.IntN(8)
		var batch []*raft.Log
		for range n {
			batch = append(batch, g.next())
		}
		step += n
		runAll(batch)
		for _, e := range batch {
			var res Result
			if json.Unmarshal([]byte(answers[e.Index]), &res) == nil {
				if cmd, _ := raftfsm.Decode(e.Data); cmd.Type == CmdPlaceOrder {
					outcomes[fmt.Sprintf("%d %s replay=%v", res.Status, res.Reason, res.Replay)]++
				}
			}
		}
		// The memory kept equals the memory built from the files.
		if kept.live(&raftfsm.ApplyContext{Epoch: kept.epoch}) {
			now := fKept.Now()
			files := fromFiles(t, fKept)
			if got, want := kept.view(now), files.view(now); !reflect.DeepEqual(got, want) {
				t.Fatalf("after index %d the memory kept is\n%+v\nbuilt from the files\n%+v", g.index, got, want)
			}
			checkGateLooks(t, kept, files, fKept.Epoch(), g, now)
		}
		// The guest handler's replay check finds in memory what it finds
		// in the files (preadmit.go), for every session and key.
		checkKeyReplays(t, kept, fKept, g)
		gateAnswered += checkGateSessions(t, kept, fKept, g)
		if snapAt == 0 && step > steps/3 {
			if err := fKept.WriteSnapshot(&snap); err != nil {
				t.Fatal(err)
			}
			snapAt = g.index
			filesAt = t.TempDir()
			copyFSMFiles(t, fKept, dirKept, filesAt)
		}
	}
	for _, want := range []string{"200  replay=false", "200  replay=true", "422 IDEMPOTENCY_KEY_REUSED replay=false", "409 SESSION_BUSY replay=false", "400 PRICE_MISMATCH replay=false", "429 COOLDOWN_ACTIVE replay=false",
		"409 SESSION_ORDER_IN_PROGRESS replay=false", "409 OUT_OF_STOCK replay=false", "410 SESSION_CLOSED replay=false"} {
		if outcomes[want] == 0 {
			if testing.Short() {
				// A short log may miss a rare answer; the full one may not.
				t.Logf("no order answered %q in this short log (%v)", want, outcomes)
				continue
			}
			t.Errorf("no order answered %q: the log does not exercise the gate (%v)", want, outcomes)
		}
	}
	if gateAnswered == 0 {
		t.Error("the order gate's session lookup never answered from memory")
	}
	dump := admitDump(t, fKept)
	for name, f := range map[string]*raftfsm.FSM{"rebuilt before every command": fAlways, "grouped": fGrouped} {
		if !bytes.Equal(admitDump(t, f), dump) {
			t.Fatalf("the %s FSM's files differ from the kept one's", name)
		}
	}

	// A snapshot restore over newer state builds the memory again: the
	// grouped FSM goes back to snapAt and applies the rest of the log.
	if err := fGrouped.Restore(io.NopCloser(bytes.NewReader(snap.Bytes()))); err != nil {
		t.Fatal(err)
	}
	apply(fGrouped, "restored", log[snapAt:])
	if a, b := admitSequences(t, fKept), admitSequences(t, fGrouped); a != b {
		t.Fatalf("after a restore and the rest of the log the AUTOINCREMENT counters differ: %s, restored %s", a, b)
	}
	if !bytes.Equal(admitDump(t, fGrouped), dump) {
		t.Fatal("after a restore and the rest of the log the files differ")
	}

	// A restart over older files, with the same registry (its memory
	// holds the newer state), builds it again too.
	fKept.Close()
	copyDir(t, filesAt, dirKept)
	fKept = admitOpen(t, dirKept, kept, raftfsm.Grouping{})
	if fKept.Applied() != snapAt {
		t.Fatalf("reopened at %d, want %d", fKept.Applied(), snapAt)
	}
	apply(fKept, "restarted", log[snapAt:])
	if !bytes.Equal(admitDump(t, fKept), dump) {
		t.Fatal("after a restart and the rest of the log the files differ")
	}
	t.Logf("%d entries; orders: %v", len(log), outcomes)
}

// copyFSMFiles copies f's committed files in dir to dst.
func copyFSMFiles(t *testing.T, f *raftfsm.FSM, dir, dst string) {
	t.Helper()
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	// A snapshot of the files is what a copy of them is; write it out as
	// files by restoring it into a fresh FSM there.
	var b bytes.Buffer
	if err := f.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	g := admitOpen(t, dst, &admitState{}, raftfsm.Grouping{})
	if err := g.Restore(io.NopCloser(&b)); err != nil {
		t.Fatal(err)
	}
	g.Close()
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dst, e.Name()))
	}
	entries, err = os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Every command the node registers is known to the admission state: it
// keeps the memory, changes nothing the gate reads, or is the KV's own
// write. A command missing from both lists would drop the memory each
// time it applies (correct, slow): classify it.
func TestEveryCommandIsKnownToTheAdmissionState(t *testing.T) {
	reg := admitRegistry(&admitState{})
	for c := 0; c < 256; c++ {
		ct := raftfsm.CommandType(c)
		if !reg.Has(ct) {
			continue
		}
		if !admitKept(ct) && !admitNoEffect[ct] && ct != kv.CmdOp {
			t.Errorf("command %s (%d): does it change what the order gate reads? Add it to admitKeepers or admitNoEffect", reg.Name(ct), c)
		}
		if admitKept(ct) && admitNoEffect[ct] {
			t.Errorf("command %s (%d) is in both lists", reg.Name(ct), c)
		}
	}
}

// A command the memory does not know drops it, and the next order builds
// it again from the files.
func TestAnUnknownCommandDropsTheAdmissionState(t *testing.T) {
	st := &admitState{}
	f := admitOpen(t, t.TempDir(), st, raftfsm.Grouping{})
	defer f.Close()
	g := newAdmitGen(3)
	f.ApplyBatch(append(g.setup(), g.order()))
	if !st.built {
		t.Fatal("an order did not build the memory")
	}
	ctx := &raftfsm.ApplyContext{Epoch: st.epoch}
	st.observe(ctx, CmdBump) // changes nothing the gate reads
	if !st.built {
		t.Fatal("a bump dropped the memory")
	}
	st.observe(ctx, raftfsm.CommandType(250))
	if st.built {
		t.Fatal("an unknown command kept the memory")
	}
}

// What the memory keeps is bounded by the windows: once FSM time passed
// every window, only the order ids (live and archived orders) and the
// sessions' tables are left; a checkout drops the session's share.
func TestAdmitStateDropsWhatLapsed(t *testing.T) {
	st := &admitState{}
	f := admitOpen(t, t.TempDir(), st, raftfsm.Grouping{})
	defer f.Close()
	g := newAdmitGen(5)
	f.ApplyBatch(g.setup())
	sess := g.sessions[0]
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	var batch []*raft.Log
	for i := range 50 {
		lines := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1 + i}})
		g.now += 2000 // past the burst window
		batch = append(batch, g.entry(CmdPlaceOrder, versionOf(CmdPlaceOrder), placeOrderCmd{SessionID: sess, Source: "guest", Node: "a",
			Items: lines, Fingerprint: admission.Fingerprint(sess, lines), ClientID: fmt.Sprintf("guest-lapse%06d", i),
			RequestID: fmt.Sprintf("550e8400-e29b-41d4-a716-4466554%05d", i), CandidateID: int64(1000 + i), Windows: w}))
	}
	// And the same cart under a new key: a KV key for that key.
	batch = append(batch, g.entry(CmdPlaceOrder, versionOf(CmdPlaceOrder), placeOrderCmd{SessionID: sess, Source: "guest", Node: "a",
		Items:       admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 50}}),
		Fingerprint: admission.Fingerprint(sess, admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 50}})),
		ClientID:    "guest-lapseother", RequestID: "550e8400-e29b-41d4-a716-446655499999", CandidateID: 5, Windows: w}))
	for i, r := range f.ApplyBatch(batch) {
		if a := admitAnswer(r); !bytes.Contains([]byte(a), []byte(`"status":200`)) {
			t.Fatalf("order %d: %s", i, a)
		}
	}
	a := st.sessions[sess]
	if len(a.byKey) != 50 || len(a.byCart) == 0 || len(st.windows) == 0 {
		t.Fatalf("the windows are not kept: %d keys, %d carts, %d KV windows", len(a.byKey), len(a.byCart), len(st.windows))
	}
	// An hour and more later, one more command of the gate prunes.
	g.now += 3_700_000
	f.ApplyBatch([]*raft.Log{g.entry(CmdPlaceOrder, versionOf(CmdPlaceOrder), placeOrderCmd{SessionID: g.sessions[1], Source: "staff", Node: "a",
		Items: admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1}}), Fingerprint: admission.Fingerprint(g.sessions[1], nil),
		CandidateID: 7, Windows: Windows{}})})
	if len(a.byKey) != 0 || len(a.byCart) != 0 || len(st.windows) != 0 {
		t.Fatalf("lapsed entries kept: %d keys, %d carts, %d KV windows", len(a.byKey), len(a.byCart), len(st.windows))
	}
	if len(st.ids) != 51 { // 50 orders and the staff one: the same cart replayed
		t.Fatalf("%d ids in use, want 51", len(st.ids))
	}
	// Checkout drops the session.
	f.ApplyBatch([]*raft.Log{g.entry(CmdCheckout, versionOf(CmdCheckout), checkoutCmd{SessionID: sess, Node: "a"})})
	if _, kept := st.sessions[sess]; kept {
		t.Fatal("a closed session is kept")
	}
}

// BenchmarkAdmitStateBytesPerOrder is the heap the admission state holds
// per admitted guest order while its windows are open (the default
// windows: key 60 min, cart 30 s, cooldown 3 s, burst 1 s), and what is
// left per order once they lapsed (its id). It measures a copy built
// from the files beside the one kept (the kept one's maps hold the same).
//
//	go test -run '^$' -bench AdmitStateBytesPerOrder -benchtime 20000x ./orders/
func BenchmarkAdmitStateBytesPerOrder(b *testing.B) {
	st := &admitState{}
	f, err := raftfsm.Open(raftfsm.Options{Dir: b.TempDir(), Registry: admitRegistry(st), Migrate: store.Migrate,
		Logger: slog.New(slog.DiscardHandler), Grouping: raftfsm.Grouping{Delay: time.Hour, Entries: 512}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	g := newAdmitGen(9)
	f.ApplyBatch(g.setup())
	const sessions = 64
	var setup []*raft.Log
	for range sessions {
		setup = append(setup, g.open())
	}
	f.ApplyBatch(setup)
	ids := g.sessions[len(g.sessions)-sessions:]
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	logs := make([]*raft.Log, b.N)
	g.step = 2000 / sessions // each session every 2 s: past its burst
	for i := range logs {
		sid := ids[i%sessions]
		lines := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1 + (i/sessions)%99}, {MenuID: "ramen", Quantity: 1 + (i/sessions/99)%99}})
		logs[i] = g.entry(CmdPlaceOrder, versionOf(CmdPlaceOrder), placeOrderCmd{SessionID: sid, Source: "guest", Node: "a", Items: lines,
			Fingerprint: admission.Fingerprint(sid, lines), ClientID: fmt.Sprintf("guest-bytes%08d", i),
			RequestID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), CandidateID: int64(1 + i), Windows: w,
			Attempt: fmt.Sprintf("%016x", i)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		for _, r := range f.ApplyBatch(logs[i:min(i+64, b.N)]) {
			if a := admitAnswer(r); !strings.Contains(a, `"status":200`) || strings.Contains(a, `"replay":true`) {
				b.Fatalf("order not admitted: %s", a)
			}
		}
	}
	b.StopTimer()
	if err := f.Flush(); err != nil {
		b.Fatal(err)
	}
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	// A copy built at now, and one built after every window lapsed.
	at := func(now int64) *admitState {
		c := &admitState{}
		err := f.View(func(btx *bolt.Tx) error {
			return f.Query(func(db *sql.DB) error {
				return c.rebuild(&raftfsm.ApplyContext{Now: now, Bolt: btx, DB: db, Epoch: 1}, kv.NewTx(btx, now, 0))
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	h0 := heap()
	held := at(f.Now())
	h1 := heap()
	lapsed := at(f.Now() + 3_700_000)
	h2 := heap()
	runtime.KeepAlive(held)
	runtime.KeepAlive(lapsed)
	n := float64(b.N)
	b.ReportMetric(float64(h1-h0)/n, "held-B/order")
	b.ReportMetric(float64(h2-h1)/n, "lapsed-B/order")
}
