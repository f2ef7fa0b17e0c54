package orders

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/menuimage"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// The FSM with the real dispatch table (KV and domain) is fed arbitrary
// bytes as a committed Raft entry, on top of a replica that already holds
// a menu, stock, an open session, an order and some coordination keys.
// A corrupt entry may be answered with an error, but it must never panic
// the FSM, and a malformed payload of a known type must never halt it:
// every node would halt on the same entry, and the store would stop
// taking orders. Only a command type this version does not know, without
// the ignorable flag, halts by design (docs/architecture.md, "Determinism
// rules for Apply": mixed versions).

const (
	fzSession  = "S0000000000000000000001"
	fzSession2 = "S0000000000000000000002"
	fzSession3 = "S0000000000000000000003"
	fzPIN      = "1234"
	fzClient   = "guest-fuzzclient01"
	fzKey      = "550e8400-e29b-41d4-a716-446655440000"
	fzFSMTime  = 1_700_000_000_000
)

func fzEntry(index uint64, t raftfsm.CommandType, payload any) *raft.Log {
	return fzEntryV(index, t, versionOf(t), payload)
}

// fzEntryV is a command of version v: raw bytes as given, a command
// struct encoded as the proposer encodes that version.
func fzEntryV(index uint64, t raftfsm.CommandType, v uint8, payload any) *raft.Log {
	var p []byte
	switch pv := payload.(type) {
	case []byte:
		p = pv
	case string:
		p = []byte(pv)
	default:
		b, err := encodeCommand(pv, v)
		if err != nil {
			panic(err)
		}
		p = b
	}
	cmd := raftfsm.Command{Type: t, Version: v, FSMTime: fzFSMTime + int64(index)*10, WallTime: fzFSMTime, Payload: p}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}
}

func fzPrice(v int64) *int64 { return &v }

func fzLines() []admission.Line {
	return admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg"}}, {MenuID: "tea", Quantity: 1}})
}

// fzSetup is the replica every fuzz input is applied on top of.
func fzSetup() []*raft.Log {
	ramen := store.MenuItem{MenuID: "ramen", Name: "醤油ラーメン", NameEn: "Shoyu ramen", Category: "noodles", Price: 900, Available: true,
		Toppings: []store.Topping{{ToppingID: "egg", Name: "味玉", Price: 120}, {ToppingID: "nori", Name: "海苔", Price: 80}}}
	tea := store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: true, Toppings: []store.Topping{}}
	lines := fzLines()
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	return []*raft.Log{
		fzEntry(1, CmdUpsertMenu, upsertMenuCmd{Item: ramen}),
		fzEntry(2, CmdUpsertMenu, upsertMenuCmd{Item: tea}),
		fzEntry(3, CmdSetStock, setStockCmd{SKU: "egg", Quantity: fzPrice(10)}),
		fzEntry(4, CmdOpenSession, openSessionCmd{SessionID: fzSession, TableID: "T1", PIN: fzPIN}),
		fzEntry(5, CmdOpenSession, openSessionCmd{SessionID: fzSession2, TableID: "T2", PIN: "9876"}),
		fzEntry(6, CmdPlaceOrder, placeOrderCmd{SessionID: fzSession, RequestID: fzKey, ClientID: fzClient, Source: "guest", Node: "a",
			Items: lines, Fingerprint: admission.Fingerprint(fzSession, lines), CandidateID: 12345, Windows: w}),
		fzEntry(7, CmdPINFailure, pinFailureCmd{SessionID: fzSession2, Client: fzClient, Node: "a"}),
		fzEntry(8, CmdCheckoutBegin, checkoutCmd{SessionID: fzSession2, LockTTLms: 60000, Node: "a"}),
		fzEntry(9, kv.CmdOp, map[string]any{"op": "put", "key": "lock:x", "value": []byte("t"), "ttlMs": 5000}),
		fzEntry(10, CmdOpenSession, openSessionCmd{SessionID: fzSession3, TableID: "T3", PIN: "5555"}),
	}
}

// fzSeeds are whole log entries (envelope and payload), good and bad, of
// every type the node registers.
func fzSeeds() [][]byte {
	lines := fzLines()
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	order := placeOrderCmd{SessionID: fzSession, RequestID: "6ba7b810-9dad-41d1-80b4-00c04fd430c8", ClientID: "guest-fuzzclient02", Source: "guest",
		Node: "b", Items: lines, Fingerprint: admission.Fingerprint(fzSession, lines), CandidateID: 777, Windows: w}
	long := strings.Repeat("k", 600)
	fresh := order
	fresh.SessionID = fzSession3
	fresh.Fingerprint = admission.Fingerprint(fzSession3, lines)
	var seeds []*raft.Log
	add := func(t raftfsm.CommandType, p any) { seeds = append(seeds, fzEntry(100, t, p)) }
	// Well-formed commands.
	add(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "gyoza", Name: "餃子", Price: 450, Available: true, Toppings: []store.Topping{}}})
	add(CmdSetStock, setStockCmd{SKU: "ramen", Quantity: fzPrice(3)})
	add(CmdSetStock, setStockCmd{SKU: "ramen"})
	add(CmdOpenSession, openSessionCmd{SessionID: "S0000000000000000000004", TableID: "T4", PIN: "0000"})
	add(CmdPlaceOrder, order)
	replay := order
	replay.RequestID, replay.ClientID = fzKey, fzClient
	add(CmdPlaceOrder, replay)
	staff := order
	staff.Source, staff.RequestID, staff.ClientID = "staff", "", ""
	add(CmdPlaceOrder, staff)
	add(CmdSetOrderStatus, setOrderStatusCmd{OrderID: 12345, Status: store.StatusCancelled, Node: "a"})
	add(CmdSetOrderStatus, setOrderStatusCmd{OrderID: 12345, Status: store.StatusCooking, Node: "a"})
	add(CmdCheckoutBegin, checkoutCmd{SessionID: fzSession, LockTTLms: 900000, Node: "a"})
	add(CmdCheckoutCancel, checkoutCmd{SessionID: fzSession2, Node: "a"})
	add(CmdCheckout, checkoutCmd{SessionID: fzSession, Node: "a"})
	add(CmdPINFailure, pinFailureCmd{SessionID: fzSession, Client: "addr-192.168.1.77", Node: "a"})
	add(CmdForceRelease, forceReleaseCmd{Key: "lock:session:" + fzSession2, Node: "a"})
	add(CmdOutboxSynced, outboxSyncedCmd{Seqs: []int64{1, 2, 3}})
	add(CmdRevokeToken, revokeTokenCmd{TokenID: "0123456789abcdef0123456789abcdef", TTLms: 60000})
	add(CmdHousekeeping, housekeepingCmd{ArchiveBeforeWall: fzFSMTime + 1, AuditBeforeWall: fzFSMTime + 1, Limit: 10})
	add(CmdGuestCall, guestCallCmd{SessionID: fzSession, Kind: "bill"})
	add(CmdCallDone, callDoneCmd{CallID: 1})
	add(CmdCloseDay, closeDayCmd{Label: "2026-12-01", Force: true})
	// Menu content (content.go): words, a picture, its removal, category names.
	desc, allergens, unknown := "鶏ガラ", []string{"wheat", "egg"}, []string{"gluten"}
	gyoza := store.MenuItem{MenuID: "gyoza", Name: "餃子", Price: 450, Available: true, Toppings: []store.Topping{}}
	add(CmdUpsertMenu, upsertMenuCmd{Item: gyoza, Content: &store.ContentPatch{Names: &store.Names{"zh-Hans": "煎饺"}, Description: &desc, Allergens: &allergens}})
	pic := []byte("\xff\xd8\xff a re-encoded picture")
	add(CmdSetMenuImage, setMenuImageCmd{MenuID: "ramen", Hash: menuimage.Hash(pic), ContentType: "image/jpeg", Data: pic})
	add(CmdSetMenuImage, setMenuImageCmd{MenuID: "ramen"})
	add(CmdSetCategoryNames, setCategoryNamesCmd{Category: "noodles", Names: store.Names{"ko": "면류"}})
	add(CmdUpsertMenu, upsertMenuCmd{Item: gyoza, Content: &store.ContentPatch{Allergens: &unknown}})
	add(CmdUpsertMenu, upsertMenuCmd{Item: gyoza, Content: &store.ContentPatch{Names: &store.Names{"not a tag": "x"}}})
	add(CmdSetMenuImage, setMenuImageCmd{MenuID: "ramen", Hash: menuimage.Hash(pic[1:]), ContentType: "image/jpeg", Data: pic})
	add(CmdSetMenuImage, setMenuImageCmd{MenuID: "nosuch", Hash: menuimage.Hash(pic), ContentType: "image/jpeg", Data: pic})
	add(CmdSetCategoryNames, setCategoryNamesCmd{Category: "", Names: store.Names{"ko": "x"}})
	// A menu at once (menuimport.go): two items, then one refused for an id twice.
	add(CmdImportMenu, importMenuCmd{Items: []upsertMenuCmd{{Item: gyoza, Content: &store.ContentPatch{Allergens: &allergens}},
		{Item: store.MenuItem{MenuID: "karaage", Name: "唐揚げ", Price: 500, Available: true, Toppings: []store.Topping{}}}}})
	add(CmdImportMenu, importMenuCmd{Items: []upsertMenuCmd{{Item: gyoza}, {Item: gyoza}}})
	// The store's time zone (timezone.go): a name, one no database has, a bad shape.
	add(CmdShopTimeZone, shopTimeZoneCmd{Zone: "Asia/Tokyo", SetAt: 1})
	add(CmdShopTimeZone, shopTimeZoneCmd{Zone: "Mars/Olympus"})
	add(CmdShopTimeZone, shopTimeZoneCmd{Zone: "Local"})
	add(kv.CmdOp, map[string]any{"op": "txn", "conds": []map[string]any{{"key": "lock:x"}}, "ops": []map[string]any{{"key": "lock:x", "delete": true}}})
	add(kv.CmdExpire, map[string]any{"limit": 10})
	// Malformed payloads of known types: bad JSON, wrong types, values the
	// HTTP layer never sends.
	for _, t := range []raftfsm.CommandType{kv.CmdOp, kv.CmdExpire, CmdUpsertMenu, CmdSetStock, CmdOpenSession, CmdPlaceOrder, CmdSetOrderStatus,
		CmdCheckoutBegin, CmdCheckoutCancel, CmdCheckout, CmdPINFailure, CmdForceRelease, CmdOutboxSynced, CmdRevokeToken, CmdHousekeeping,
		CmdGuestCall, CmdCallDone, CmdCloseDay, CmdSetMenuImage, CmdSetCategoryNames, CmdImportMenu, CmdShopTimeZone} {
		add(t, "")
		add(t, "{")
		add(t, "[]")
		add(t, `{"sessionId":7}`)
		add(t, "null")
	}
	add(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "bad", Name: "x", Price: -1}})
	add(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "bad", Name: "x", Price: 1,
		Toppings: []store.Topping{{ToppingID: "egg", Name: "a"}, {ToppingID: "egg", Name: "b"}}}})
	add(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "bad", Name: "x", Price: 1, Toppings: []store.Topping{{ToppingID: "t", Name: "a", Price: -5}}}})
	add(CmdSetStock, setStockCmd{SKU: "ramen", Quantity: fzPrice(-1)})
	add(CmdPINFailure, pinFailureCmd{SessionID: fzSession, Client: long})
	add(CmdPINFailure, pinFailureCmd{SessionID: long, Client: "x"})
	add(CmdRevokeToken, revokeTokenCmd{TokenID: long, TTLms: 1})
	add(CmdCheckoutBegin, checkoutCmd{SessionID: fzSession, LockTTLms: -1})
	add(CmdForceRelease, forceReleaseCmd{Key: long})
	add(CmdPlaceOrder, fresh)
	bad := fresh
	bad.RequestID = long
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.ClientID = long
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Fingerprint = long
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Items = []admission.Line{{MenuID: "ramen", Quantity: -3}}
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Items = []admission.Line{{MenuID: "ramen", Quantity: 1 << 62, Toppings: []string{"egg"}}}
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Items = []admission.Line{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg", "egg"}}}
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Windows = Windows{CooldownMs: -1, BurstMs: -1, PayloadMs: -1, IdempotencyMs: -1}
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.Source, bad.RequestID = "staff", strings.Repeat("a", 600)
	add(CmdPlaceOrder, bad)
	bad = fresh
	bad.SessionID = long
	add(CmdPlaceOrder, bad)
	// placeOrder in every version (JSON up to 3, binary from 4), and
	// damaged binary payloads: some prefixes, the rest as is.
	for v := uint8(1); v < versionOf(CmdPlaceOrder); v++ {
		seeds = append(seeds, fzEntryV(100, CmdPlaceOrder, v, fresh))
	}
	for i, p := range placeV4Corruptions(fresh) {
		if i%24 == 0 || i >= len(fresh.appendBinary(nil)) {
			add(CmdPlaceOrder, p)
		}
	}
	add(kv.CmdOp, map[string]any{"op": "put", "key": long})
	add(kv.CmdOp, map[string]any{"op": "txn", "ops": []map[string]any{{"key": ""}}})
	add(kv.CmdOp, map[string]any{"op": "put", "key": "k", "ttlMs": int64(1) << 62})
	// Unknown types: ignorable (answered) and a newer version's type.
	ign := raftfsm.Command{Type: 250, Version: 1, Flags: raftfsm.FlagIgnorable, FSMTime: 1, Payload: []byte("{}")}
	out := [][]byte{ign.Encode()}
	for _, l := range seeds {
		out = append(out, l.Data)
	}
	// Broken envelopes.
	out = append(out, []byte{}, []byte{1}, []byte{2, 35, 1, 0}, fzEntry(100, CmdPlaceOrder, "{}").Data[:19])
	return out
}

// fzRegistry is the node's real dispatch table.
func fzRegistry() *raftfsm.Registry {
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	Register(reg)
	return reg
}

// fzOpen opens a fresh FSM holding the fzSetup replica: a copy of the
// files fzBuild made in template once (building them for every input
// would spend the fuzzing time on migrations).
func fzOpen(t testing.TB, template string) *raftfsm.FSM {
	return fzOpenGrouped(t, template, raftfsm.Grouping{})
}

// fzOpenGrouped is fzOpen with the FSM committing its files per group of
// batches, as a node's does.
func fzOpenGrouped(t testing.TB, template string, g raftfsm.Grouping) *raftfsm.FSM {
	dir := t.TempDir()
	entries, err := os.ReadDir(template)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(template, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: fzRegistry(), Migrate: store.Migrate, Logger: slog.New(slog.DiscardHandler), Grouping: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if f.Applied() != uint64(len(fzSetup())) {
		t.Fatalf("template replica at index %d", f.Applied())
	}
	return f
}

func fzBuild(dir string) error {
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: fzRegistry(), Migrate: store.Migrate, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer f.Close()
	for i, r := range f.ApplyBatch(fzSetup()) {
		res, _ := r.(raftfsm.Response)
		if res.Err != nil {
			return fmt.Errorf("setup entry %d: %w", i+1, res.Err)
		}
		var out Result
		if json.Unmarshal(res.Data, &out) == nil && out.Status != 0 && out.Status != 200 {
			return fmt.Errorf("setup entry %d: %s", i+1, res.Data)
		}
	}
	return nil
}

// fzCheck applies data as entry 100 (alone, then again in a batch with a
// good command after it) and checks the FSM's promises.
func fzCheck(t *testing.T, f *raftfsm.FSM, data []byte, index uint64) {
	t.Helper()
	entry := &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
	res := f.Apply(entry)
	r, ok := res.(raftfsm.Response)
	if !ok {
		t.Fatalf("Apply returned %T", res)
	}
	cmd, derr := raftfsm.Decode(data)
	// The mixed-versions rule (raftfsm.ApplyBatch): what this node cannot
	// apply exactly as a newer one would halts it.
	haltExpected := errors.Is(derr, raftfsm.ErrNewerFormat)
	if derr == nil {
		if !fzRegistered(cmd.Type) && cmd.Flags&raftfsm.FlagIgnorable == 0 {
			haltExpected = true
		}
		if fzRegistered(cmd.Type) && max(cmd.Version, 1) > fzRegistry().MaxVersion(cmd.Type) {
			haltExpected = true
		}
	}
	if err := f.Halted(); err != nil {
		if !haltExpected {
			t.Fatalf("entry (type %d, payload %.200q) halted the FSM: %v", cmd.Type, cmd.Payload, err)
		}
		if !errors.Is(r.Err, raftfsm.ErrHalted) {
			t.Fatalf("halted, but the proposer got %v", r.Err)
		}
		return
	}
	if haltExpected {
		t.Fatalf("entry (type %d version %d) this node cannot apply exactly was applied", cmd.Type, cmd.Version)
	}
	if f.Applied() != index {
		t.Fatalf("applied index %d after entry %d", f.Applied(), index)
	}
	// A known type answers with a result the proposer can decode.
	if derr == nil && fzRegistered(cmd.Type) {
		if r.Err != nil {
			t.Fatalf("known type %d answered an error: %v", cmd.Type, r.Err)
		}
		if !json.Valid(r.Data) {
			t.Fatalf("type %d answered non-JSON %q", cmd.Type, r.Data)
		}
	}
	// The FSM goes on: the next good command applies.
	next := fzEntry(index+1, kv.CmdOp, map[string]any{"op": "put", "key": fmt.Sprintf("after:%d", index), "value": []byte("v")})
	nr, _ := f.Apply(next).(raftfsm.Response)
	if nr.Err != nil || f.Halted() != nil || f.Applied() != index+1 {
		t.Fatalf("good command after the entry: %v (halted %v, applied %d)", nr.Err, f.Halted(), f.Applied())
	}
}

func fzRegistered(t raftfsm.CommandType) bool { return fzRegistry().Has(t) }

// FuzzFSMApply runs its seeds in every `go test`; .ci/fuzz.sh explores
// further.
func FuzzFSMApply(f *testing.F) {
	for _, s := range fzSeeds() {
		f.Add(s)
	}
	template := f.TempDir()
	if err := fzBuild(template); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fzCheck(t, fzOpen(t, template), data, 100)
	})
}
