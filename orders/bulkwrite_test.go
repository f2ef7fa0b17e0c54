package orders

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// bulkWriteLog is a mixed log: the golden replay's 600 orders of old
// versions (a printer, id collisions, stock running out, cancellations,
// day closes), then orders of this build's version, reprints, outbox
// syncs, housekeeping that deletes audit rows, and every fuzz seed a
// node applies (good and bad commands of every type).
func bulkWriteLog() []*raft.Log {
	log := goldenReplayLog()
	next := func(t raftfsm.CommandType, p any) {
		e := fzEntry(uint64(len(log)+1), t, p)
		log = append(log, e)
	}
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	next(CmdPutPrinter, putPrinterCmd{Printer: store.Printer{PrinterID: "d1", Addr: "127.0.0.1:9101", Stations: []string{"kitchen", "drinks"}, Receipts: true}})
	for i := range 200 {
		sid := fmt.Sprintf("S%022d", 5000+i%150)
		lines := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1 + i%4}, {MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}}})
		src, req, client := "guest", fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i), fmt.Sprintf("guest-bulk%012x", i)
		if i%9 == 4 {
			src, req, client = "staff", "", ""
		}
		next(CmdPlaceOrder, placeOrderCmd{SessionID: sid, RequestID: req, ClientID: client, Source: src, Node: "b", Items: lines,
			Fingerprint: admission.Fingerprint(sid, lines), CandidateID: int64(200000 + i%13), Windows: w, Attempt: fmt.Sprintf("b%d", i)})
		switch i % 25 {
		case 3:
			next(CmdReprint, reprintCmd{OrderID: 200000})
		case 11:
			next(CmdOutboxSynced, outboxSyncedCmd{Seqs: []int64{int64(i), int64(i + 1), int64(i + 2)}})
		case 17:
			next(CmdHousekeeping, housekeepingCmd{ArchiveBeforeWall: fzFSMTime + 1, AuditBeforeWall: fzFSMTime + 1, Limit: 7})
		case 21:
			next(CmdCheckout, checkoutCmd{SessionID: sid, Node: "b"})
		}
	}
	reg := fzRegistry()
	for _, data := range fzSeeds() {
		// Not the seeds that halt a node (a newer envelope, type or
		// version): the halt is tested elsewhere, and ends the log.
		cmd, err := raftfsm.Decode(data)
		if errors.Is(err, raftfsm.ErrNewerFormat) || err == nil && cmd.Flags&raftfsm.FlagIgnorable == 0 && max(cmd.Version, 1) > reg.MaxVersion(cmd.Type) {
			continue
		}
		log = append(log, &raft.Log{Index: uint64(len(log) + 1), Term: 1, Type: raft.LogCommand, Data: data})
	}
	return log
}

// The order's rows queued and written in bulk (raftfsm/bulk.go) give every
// table the same rows, with the same rowids and AUTOINCREMENT numbers, and
// every command the same answer as one statement per row, whether the
// files commit per batch or per group of batches.
func TestBulkWritesGiveTheSameStateAsImmediateWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("applies about 2,000 entries three times")
	}
	log := bulkWriteLog()
	run := func(g raftfsm.Grouping) (answers, dump []byte, rows, stmts uint64) {
		f, err := raftfsm.Open(raftfsm.Options{Dir: filepath.Join(t.TempDir(), "fsm"), Registry: fzRegistry(), Migrate: store.Migrate,
			Logger: slog.New(slog.DiscardHandler), Grouping: g})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b bytes.Buffer
		for i := 0; i < len(log); i += 8 {
			for k, r := range f.ApplyBatch(log[i:min(i+8, len(log))]) {
				res := r.(raftfsm.Response)
				if res.Err != nil && f.Halted() != nil {
					t.Fatalf("entry %d halted the FSM: %v", i+k+1, res.Err)
				}
				fmt.Fprintf(&b, "R %d %v %s\n", i+k+1, res.Err, res.Data)
			}
		}
		var d bytes.Buffer
		if err := f.Dump(&d); err != nil {
			t.Fatal(err)
		}
		rows, stmts = f.QueueStats()
		return b.Bytes(), d.Bytes(), rows, stmts
	}
	wantAnswers, wantDump, rows, _ := run(raftfsm.Grouping{Immediate: true})
	if rows != 0 {
		t.Fatalf("%d rows queued with every write immediate", rows)
	}
	if !bytes.Contains(wantDump, []byte("print_jobs")) || bytes.Count(wantAnswers, []byte(`"ticketNo"`)) < 250 {
		t.Fatal("the log did not make print jobs and orders")
	}
	for _, g := range []raftfsm.Grouping{{}, {Delay: time.Hour, Entries: 64}} {
		answers, dump, rows, stmts := run(g)
		if !bytes.Equal(answers, wantAnswers) {
			t.Fatalf("grouping %+v: the answers differ from the immediate writes'", g)
		}
		if !bytes.Equal(dump, wantDump) {
			t.Fatalf("grouping %+v: the state differs from the immediate writes'", g)
		}
		// Per batch of 8 entries a table's rows share a statement; per
		// group of 64, many more.
		if rows < 1000 || stmts >= rows || g.Delay > 0 && stmts*4 > rows {
			t.Fatalf("grouping %+v: %d rows queued in %d statements", g, rows, stmts)
		}
		t.Logf("grouping %+v: %d rows in %d statements", g, rows, stmts)
	}
}
