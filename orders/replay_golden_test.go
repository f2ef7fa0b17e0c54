package orders

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// goldenReplayLog is a log as build 813a768 wrote it (its command versions
// and JSON payloads): a menu with a tracked topping, a printer, 150
// sessions, 600 guest orders (a seventh of them on one candidate id, so
// each walks to the next free id), stock running out and refilled, orders
// cancelled and a day closed every 50 orders (ticket numbers restart).
func goldenReplayLog() []*raft.Log {
	var log []*raft.Log
	add := func(t raftfsm.CommandType, version uint8, payload any) {
		p, err := json.Marshal(payload)
		if err != nil {
			panic(err)
		}
		i := uint64(len(log) + 1)
		cmd := raftfsm.Command{Type: t, Version: version, FSMTime: fzFSMTime + int64(i)*10, WallTime: fzFSMTime, Payload: p}
		log = append(log, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()})
	}
	stock := func(sku string, q int64) { add(CmdSetStock, 2, setStockCmd{SKU: sku, Quantity: &q}) }
	add(CmdUpsertMenu, 2, upsertMenuCmd{Item: store.MenuItem{MenuID: "ramen", Name: "醤油ラーメン", Price: 900, Available: true,
		Toppings: []store.Topping{{ToppingID: "egg", Name: "味玉", Price: 120}}}})
	add(CmdUpsertMenu, 2, upsertMenuCmd{Item: store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: true, Toppings: []store.Topping{}}})
	stock("egg", 40)
	stock("tea", 500)
	add(CmdPutPrinter, 1, putPrinterCmd{Printer: store.Printer{PrinterID: "k1", Addr: "127.0.0.1:9100", Stations: []string{"kitchen"}}})
	ids := make([]string, 150)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%022d", 5000+i)
		add(CmdOpenSession, 1, openSessionCmd{SessionID: ids[i], TableID: fmt.Sprintf("X%d", i), PIN: "1234"})
	}
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	for i := range 600 {
		sid, round := ids[i%len(ids)], i/len(ids)
		items := []admission.Line{{MenuID: "tea", Quantity: 1 + round%5}}
		if i%3 != 0 {
			items = append(items, admission.Line{MenuID: "ramen", Quantity: 1 + round%3, Toppings: []string{"egg"}})
		}
		lines := admission.Normalize(items)
		cand := int64(100000 + i)
		if i%7 == 0 {
			cand = 100000
		}
		add(CmdPlaceOrder, 3, placeOrderCmd{SessionID: sid, RequestID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
			ClientID: fmt.Sprintf("guest-cross%012x", i), Source: "guest", Node: "a", Items: lines,
			Fingerprint: admission.Fingerprint(sid, lines), CandidateID: cand, Windows: w, Attempt: fmt.Sprintf("a%d", i)})
		if i%50 == 49 {
			add(CmdCloseDay, 1, closeDayCmd{Label: fmt.Sprintf("2026-01-%02d", i/50+1), Force: true})
		}
		if i%30 == 29 {
			add(CmdSetOrderStatus, 2, setOrderStatusCmd{OrderID: 100000 + int64(i-2), Status: store.StatusCancelled, Node: "a"})
			stock("egg", int64(5+i%4))
		}
	}
	return log
}

// replayText applies log in batches of 16 and writes every answer and
// every domain row (tables by name, rows by rowid; the schema version and
// the FSM's own bookkeeping left out) as text.
func replayText(t *testing.T, log []*raft.Log) string {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: filepath.Join(t.TempDir(), "fsm"), Registry: fzRegistry(), Migrate: store.Migrate,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	for i := 0; i < len(log); i += 16 {
		for k, r := range f.ApplyBatch(log[i:min(i+16, len(log))]) {
			res := r.(raftfsm.Response)
			fmt.Fprintf(&b, "R %d %v %s\n", i+k+1, res.Err, res.Data)
		}
	}
	err = f.Query(func(db *sql.DB) error {
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\_%' ESCAPE '\' AND name != 'schema_version' ORDER BY name`)
		if err != nil {
			return err
		}
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		rows.Close()
		for _, n := range names {
			if err := tableText(db, n, &b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func tableText(db *sql.DB, table string, b *strings.Builder) error {
	rows, err := db.Query(`SELECT * FROM "` + table + `" ORDER BY rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		// Columns added since the golden build are left out of the text;
		// an old log must leave them empty.
		kept := vals[:0:0]
		for i, v := range vals {
			if laterColumns[table+"."+cols[i]] {
				if v != nil {
					return fmt.Errorf("an old log wrote %s.%s = %v", table, cols[i], v)
				}
				continue
			}
			kept = append(kept, v)
		}
		fmt.Fprintf(b, "T %s %v\n", table, kept)
	}
	return rows.Err()
}

// laterColumns are the columns added after build 813a768: the replay
// columns of placeOrder version 5 (store/replay.go), which no older
// command writes.
var laterColumns = map[string]bool{"orders.fingerprint": true, "orders.attempt": true, "orders.key_until": true, "orders.cart_until": true}

// goldenReplaySHA256 is the hash of replayText(goldenReplayLog()) as build
// 813a768 (before issue 19's statement changes) computed it: every answer
// and every row must stay as that build left them, for the same log.
const goldenReplaySHA256 = "4b138d07b0fc0e57b771529e07dcdd21dd1c8f060404f882373ab887710845dd"

// A log an older build wrote replays on this one to the same answers and
// the same rows (ticket numbers, stock, ids walked past collisions, print
// jobs, audit, outbox). MO_REPLAY_TEXT=path writes the text, to compare
// with the older build's by diff when the hash differs.
func TestOldLogReplaysToTheSameAnswersAndRows(t *testing.T) {
	text := replayText(t, goldenReplayLog())
	if p := os.Getenv("MO_REPLAY_TEXT"); p != "" {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{`"reason":"OUT_OF_STOCK"`, " guest 1 []]", "T day_closes", "T print_jobs", "T ticket_counter"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the log no longer reaches %s: fix the log", want)
		}
	}
	sum := sha256.Sum256([]byte(text))
	if got := hex.EncodeToString(sum[:]); got != goldenReplaySHA256 {
		t.Fatalf("replay hash %s, build 813a768 gave %s (MO_REPLAY_TEXT=file writes the text to diff)", got, goldenReplaySHA256)
	}
}
