package orders

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// An order's stock take changes the admission state's levels and queues
// each sku's new level (store.QueueStockLevel, raftfsm's QueueSet): the
// files get the newest level per sku once per group, or before any
// statement that reads or writes stock.

// stockLog is a staff order log over ramen (toppings egg and nori) and
// tea, from setup on: orders, and (mixed) cancels and stock writes.
type stockLog struct {
	index uint64
	logs  []*raft.Log
}

func (l *stockLog) add(t raftfsm.CommandType, payload any) {
	l.index++
	l.logs = append(l.logs, fzEntry(l.index, t, payload))
}

func (l *stockLog) setup(track bool, levels map[string]int64) {
	ramen := store.MenuItem{MenuID: "ramen", Name: "醤油ラーメン", Price: 900, Available: true,
		Toppings: []store.Topping{{ToppingID: "egg", Name: "味玉", Price: 120}, {ToppingID: "nori", Name: "海苔", Price: 80}}}
	tea := store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: true, Toppings: []store.Topping{}}
	l.add(CmdUpsertMenu, upsertMenuCmd{Item: ramen})
	l.add(CmdUpsertMenu, upsertMenuCmd{Item: tea})
	skus := []string{"ramen", "egg", "tea"} // in order: the map's order reaches no entry
	if !track {
		// As many entries, tracking only nori (in no cart of the log
		// that compares): the same indices, ids and times.
		skus = []string{"nori", "nori", "nori"}
	}
	for _, sku := range skus {
		q := levels[sku]
		l.add(CmdSetStock, setStockCmd{SKU: sku, Quantity: &q})
	}
	l.add(CmdOpenSession, openSessionCmd{SessionID: fzSession, TableID: "T1", PIN: fzPIN})
}

var stockCarts = [][]admission.Line{
	{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}}, {MenuID: "tea", Quantity: 2}},
	{{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg", "nori"}}},
	{{MenuID: "tea", Quantity: 3}},
	{{MenuID: "ramen", Quantity: 1, Toppings: []string{"nori"}}, {MenuID: "tea", Quantity: 1}},
}

func (l *stockLog) order(cart []admission.Line) {
	lines := admission.Normalize(cart)
	l.add(CmdPlaceOrder, placeOrderCmd{SessionID: fzSession, Source: "staff", Node: "a", Items: lines,
		Fingerprint: admission.Fingerprint(fzSession, lines), AllowRepeat: true})
}

// applyStockLog applies logs in Raft batches of 8 on a fresh node with
// grouping g, and answers each entry's response, the stock table (sku=n,
// in sku order) and the queue's statistics from the first entry of from
// on.
func applyStockLog(t *testing.T, logs []*raft.Log, from int, g raftfsm.Grouping) (answers []string, stock string, rows, stmts uint64) {
	t.Helper()
	st := &admitState{}
	f, err := raftfsm.Open(raftfsm.Options{Dir: filepath.Join(t.TempDir(), "fsm"), Registry: admitRegistry(st), Migrate: store.Migrate,
		Logger: slog.New(slog.DiscardHandler), Grouping: g})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	apply := func(logs []*raft.Log) {
		for i := 0; i < len(logs); i += 8 {
			for _, r := range f.ApplyBatch(logs[i:min(i+8, len(logs))]) {
				answers = append(answers, admitAnswer(r))
			}
		}
	}
	apply(logs[:from])
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	rows0, stmts0 := f.QueueStats()
	apply(logs[from:])
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, stmts = f.QueueStats()
	if err := f.Query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT COALESCE(group_concat(sku || '=' || quantity, ' '), '') FROM (SELECT sku, quantity FROM stock ORDER BY sku)`).Scan(&stock)
	}); err != nil {
		t.Fatal(err)
	}
	return answers, stock, rows - rows0, stmts - stmts0
}

// Many orders of one group that take the same skus cost one UPDATE per
// sku at the group's commit, not a statement per order: the queue's
// statements with stock tracked are those without it plus one per sku.
func TestOrdersOfOneGroupWriteEachSKUsStockOnce(t *testing.T) {
	const n = 40
	levels := map[string]int64{"ramen": 1000, "egg": 1000, "tea": 1000, "nori": 1000}
	run := func(track bool) ([]string, string, uint64, uint64) {
		var l stockLog
		l.setup(track, levels)
		from := len(l.logs)
		for range n {
			l.order(stockCarts[0]) // ramen, egg, tea
		}
		answers, stock, rows, stmts := applyStockLog(t, l.logs, from, raftfsm.Grouping{Delay: time.Hour, Entries: 10_000})
		return answers[from:], stock, rows, stmts
	}
	tracked, stock, rowsT, stmtsT := run(true)
	untracked, none, rowsU, stmtsU := run(false)
	for i, a := range tracked {
		if !json.Valid([]byte(a)) || decodeStatus(t, a) != http.StatusOK || a != untracked[i] {
			t.Fatalf("order %d: %s tracked, %s untracked; want the same admitted order", i, a, untracked[i])
		}
	}
	if want := fmt.Sprintf("egg=%d ramen=%d tea=%d", 1000-n, 1000-n, 1000-2*n); stock != want || none != "nori=1000" {
		t.Fatalf("stock %q (untracked %q), want %q", stock, none, want)
	}
	if rowsT-rowsU != 3*n || stmtsT-stmtsU != 3 {
		t.Fatalf("stock tracked: %d values queued in %d statements more than untracked; want %d in 3 (one UPDATE per sku)", rowsT-rowsU, stmtsT-stmtsU, 3*n)
	}
}

func decodeStatus(t *testing.T, answer string) int {
	t.Helper()
	var r Result
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	return r.Status
}

// The stock an order log leaves, and every answer, are those of one
// statement per order (the per-order take, modelled here) whatever the
// grouping: orders run the levels out (OUT_OF_STOCK judged on the levels
// the group's earlier orders left), and cancels (AddStock, then the
// memory read again from the files) and stock writes (an upsert, then
// the memory read again) in the middle of a group see the stock the
// group's orders took, before their queued levels reach the files.
func TestStockTakenInAGroupIsWhatPerOrderTakesLeave(t *testing.T) {
	levels := map[string]int64{"ramen": 30, "egg": 20, "tea": 60}
	var l stockLog
	l.setup(true, levels)
	from := len(l.logs)
	model := map[string]int64{"ramen": 30, "egg": 20, "tea": 60}
	type placed struct {
		index uint64
		take  map[string]int64
	}
	var admitted []placed
	var wantStatus []int
	for i := range 120 {
		switch {
		case i%17 == 16 && len(admitted) > 0:
			// Cancel an admitted order: its stock comes back.
			p := admitted[(i*7)%len(admitted)]
			admitted = slices.DeleteFunc(admitted, func(q placed) bool { return q.index == p.index })
			for sku, n := range p.take {
				model[sku] += n
			}
			l.add(CmdSetOrderStatus, setOrderStatusCmd{OrderID: int64(p.index%maxOrderID) + 1, Status: store.StatusCancelled, Node: "a"})
			wantStatus = append(wantStatus, http.StatusOK)
		case i%29 == 28:
			// Restock tea (the upsert names stock: the queued levels
			// are written first, and the new level wins).
			q := model["tea"] + 25
			model["tea"] = q
			l.add(CmdSetStock, setStockCmd{SKU: "tea", Quantity: &q})
			wantStatus = append(wantStatus, http.StatusOK)
		default:
			cart := stockCarts[i%len(stockCarts)]
			take := map[string]int64{}
			for _, u := range unitsPerSKU(admission.Normalize(cart)) {
				if _, tracked := model[u.sku]; tracked {
					take[u.sku] = u.n
				}
			}
			status := http.StatusOK
			for sku, n := range take {
				if model[sku] < n {
					status = http.StatusConflict
				}
			}
			if status == http.StatusOK {
				for sku, n := range take {
					model[sku] -= n
				}
				admitted = append(admitted, placed{l.index + 1, take})
			}
			l.order(cart)
			wantStatus = append(wantStatus, status)
		}
	}
	want := fmt.Sprintf("egg=%d ramen=%d tea=%d", model["egg"], model["ramen"], model["tea"])
	var first []string
	for _, g := range []raftfsm.Grouping{{Immediate: true}, {}, {Delay: time.Hour, Entries: 10_000}, {Delay: time.Hour, Entries: 13}} {
		answers, stock, _, _ := applyStockLog(t, l.logs, from, g)
		answers = answers[from:]
		var shortSeen int
		for i, a := range answers {
			if got := decodeStatus(t, a); got != wantStatus[i] {
				t.Fatalf("grouping %+v: entry %d answered %s, want status %d (per-order takes)", g, from+i+1, a, wantStatus[i])
			}
			if wantStatus[i] == http.StatusConflict {
				shortSeen++
			}
		}
		if shortSeen == 0 {
			t.Fatal("no order ran short: the log does not run the levels out")
		}
		if stock != want {
			t.Fatalf("grouping %+v: stock %q, want %q (per-order takes)", g, stock, want)
		}
		if first == nil {
			first = answers
		} else if !slices.Equal(answers, first) {
			t.Fatalf("grouping %+v: answers differ from the immediate writes'", g)
		}
	}
}
