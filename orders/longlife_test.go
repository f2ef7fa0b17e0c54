//go:build long

package orders

// A store's long life in a few minutes: 100,000 guest orders through a
// 3-node cluster (proposed straight to the leader, no HTTP), every session
// checked out, housekeeping archiving, then the files' sizes and the time a
// node takes from start to /readyz 200. Not part of the normal suite:
//
//	go test -tags long -run TestLongLife -v -timeout 30m ./orders/
//
// MO_LONG_ORDERS overrides the order count; MO_LONG_BACKUP=FILE writes a
// backup of the final state (to measure real processes on it).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders/admission"
	"masterorder/ui"

	"github.com/google/uuid"
)

func longUUID() string { return uuid.NewString() }

func fileSize(paths ...string) int64 {
	var n int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// again retries fn across leader changes; after an attempt whose outcome
// is unknown, the reason a repeat answers with (the first one went
// through) counts as success.
func again(fn func() error, doneReason string) error {
	unknown := false
	for i := 0; ; i++ {
		err := fn()
		switch {
		case err == nil:
			return nil
		case unknown && doneReason != "" && strings.Contains(err.Error(), doneReason):
			return nil
		case i < 20 && (errors.Is(err, node.ErrUnknownOutcome) || errors.Is(err, node.ErrNoQuorum)):
			unknown = unknown || errors.Is(err, node.ErrUnknownOutcome)
			time.Sleep(200 * time.Millisecond)
		default:
			return err
		}
	}
}

func TestLongLife(t *testing.T) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("MO_LONG_ORDERS")); err == nil && v > 0 {
		total = v
	}
	svcs := make([]*Service, 3)
	// Generous timeouts: this measures files and restarts, not failover,
	// and the test host's CPUs are shared.
	slow := func(_ int, c *node.Config) {
		c.Raft.HeartbeatTimeout.Duration = time.Second
		c.Raft.ElectionTimeout.Duration = time.Second
		c.Raft.LeaderLeaseTimeout.Duration = 500 * time.Millisecond
	}
	c := nodetest.Start(t, 3, slow, func(int) node.Options { return NodeOptions() }, func(i int, n *node.Node) {
		// orderstest.Domain's settings (this package cannot import it).
		dom := Defaults()
		dom.Staff.TokenSecret, dom.Demo = strings.Repeat("0123456789abcdef", 4), true
		s, err := Attach(n, dom, Options{Pages: ui.Routes})
		if err != nil {
			t.Fatal(err)
		}
		svcs[i] = s
	})
	li, leader := c.WaitLeader(10 * time.Second)
	svc := svcs[li]
	ctx := context.Background()
	if _, _, err := svc.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	// Untracked items, so stock never runs out; four different carts per
	// session, so no payload window turns an order into a replay.
	carts := [][]admission.Line{
		{{MenuID: "shoyu", Quantity: 1, Toppings: []string{"nori"}}, {MenuID: "gyoza", Quantity: 1, Toppings: []string{}}},
		{{MenuID: "miso", Quantity: 2, Toppings: []string{"garlic", "menma"}}},
		{{MenuID: "beer", Quantity: 2, Toppings: []string{}}, {MenuID: "chahan", Quantity: 1, Toppings: []string{}}},
		{{MenuID: "kaedama", Quantity: 1, Toppings: []string{}}, {MenuID: "oolong", Quantity: 1, Toppings: []string{}}},
	}
	win := svc.windows()
	win.BurstMs = 0 // orders of one session arrive milliseconds apart here, minutes apart in a shop

	var placed, sessions atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	start := time.Now()
	const workers = 32
	progressDone := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-tk.C:
				t.Logf("%v: %d orders, commit index %d", time.Since(start).Round(time.Second), placed.Load(), leader.Raft().CommitIndex())
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for placed.Load() < int64(total) {
				id := newSessionID()
				if err := again(func() error {
					_, err := refused(svc.propose(ctx, CmdOpenSession, openSessionCmd{SessionID: id, TableID: fmt.Sprintf("T%d", w), PIN: "1234"}, false))
					return err
				}, "SESSION_EXISTS"); err != nil {
					errs <- err
					return
				}
				sessions.Add(1)
				for _, cart := range carts {
					if placed.Add(1) > int64(total) {
						break
					}
					cmd := placeOrderCmd{SessionID: id, RequestID: longUUID(), ClientID: "guest-" + longUUID()[:18], Source: "guest", Node: "a",
						Items: cart, Fingerprint: admission.Fingerprint(id, cart), CandidateID: randomOrderID(), Windows: win}
					payload, _ := json.Marshal(cmd)
					var out []byte
					if err := again(func() (err error) {
						out, err = leader.Propose(ctx, node.Proposal{Type: CmdPlaceOrder, Version: 1, Payload: payload, Idempotent: true})
						return err
					}, ""); err != nil {
						errs <- err
						return
					}
					var r Result
					json.Unmarshal(out, &r)
					key := "ADMITTED"
					switch {
					case r.Status == 200 && r.Replay:
						// Every key is new: a replay is the answer to our
						// retry of an order whose first outcome was unknown.
						key = "ADMITTED (replayed after a leader change)"
					case r.Status != 200:
						key = r.Reason
					}
					mu.Lock()
					outcomes[key]++
					mu.Unlock()
				}
				if err := again(func() error {
					_, err := refused(svc.propose(ctx, CmdCheckout, checkoutCmd{SessionID: id, Node: "a"}, false))
					return err
				}, "SESSION_CLOSED"); err != nil {
					errs <- err
					return
				}
				if sessions.Load()%250 == 0 {
					// The leader's housekeeping worker runs once a minute;
					// here it keeps pace with the accelerated day.
					if err := again(func() error { return svc.Housekeep(ctx) }, ""); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(progressDone)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("%d orders in %d sessions in %v (%.0f orders/s, %.0f commands/s); outcomes %v",
		total, sessions.Load(), elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		float64(total+2*int(sessions.Load()))/elapsed.Seconds(), outcomes)
	if n := outcomes["ADMITTED"] + outcomes["ADMITTED (replayed after a leader change)"]; n != total {
		t.Fatalf("admitted %d of %d", n, total)
	}
	// Housekeeping until every closed session's orders are archived.
	for {
		r, err := refused(svc.propose(ctx, CmdHousekeeping, housekeepingCmd{Limit: 10000}, false))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]int64
		json.Unmarshal(r.Body, &got)
		if got["archived"] == 0 {
			break
		}
	}
	c.AssertIdentical(60 * time.Second)
	for i, n := range c.Nodes {
		if err := n.Raft().Snapshot().Error(); err != nil {
			t.Logf("snapshot on node %d: %v", i, err)
		}
	}
	count := func(q string) int64 {
		var v int64
		leader.FSM().Query(func(db *sql.DB) error { return db.QueryRow(q).Scan(&v) })
		return v
	}
	if n := count(`SELECT count(*) FROM orders`) + count(`SELECT count(*) FROM orders_archive`); n != int64(total) {
		t.Fatalf("%d orders stored, want %d", n, total)
	}
	t.Logf("rows: orders %d, orders_archive %d, sessions %d, audit %d, outbox %d",
		count(`SELECT count(*) FROM orders`), count(`SELECT count(*) FROM orders_archive`), count(`SELECT count(*) FROM sessions`),
		count(`SELECT count(*) FROM audit`), count(`SELECT count(*) FROM outbox`))
	for i, cfg := range c.Configs {
		d := cfg.DataDir
		t.Logf("node %s files: bbolt FSM %s, SQLite %s (+wal %s), raft log %s, snapshots %s, last log index %d",
			cfg.NodeID, mb(fileSize(filepath.Join(d, "fsm", "fsm.bolt"))), mb(fileSize(filepath.Join(d, "fsm", "domain.sqlite"))),
			mb(fileSize(filepath.Join(d, "fsm", "domain.sqlite-wal"))), mb(fileSize(filepath.Join(d, "raft", "raft.db"))),
			mb(dirSize(filepath.Join(d, "raft", "snapshots"))), c.Nodes[i].Raft().LastIndex())
	}
	if out := os.Getenv("MO_LONG_BACKUP"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := leader.WriteBackup(ctx, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("backup at index %d: %s, %s", idx, out, mb(fileSize(out)))
	}

	// Start to ready: a follower restarts from its files; then the same
	// follower rebuilds from snapshot + log (its FSM files lost).
	fi, _ := c.Follower()
	t.Logf("follower %s restart to /readyz 200: %v", c.Configs[fi].NodeID, c.RestartTimed(fi).Round(time.Millisecond))
	c.StopNode(fi)
	for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal", "domain.sqlite-shm"} {
		os.Remove(filepath.Join(c.Configs[fi].DataDir, "fsm", name))
	}
	t.Logf("follower %s rebuild from snapshot + log to /readyz 200: %v", c.Configs[fi].NodeID, c.RestartTimed(fi).Round(time.Millisecond))
	// The same with the files damaged rather than gone (they are checked,
	// set aside, and rebuilt): bbolt cut to a third, 16 KiB of zeros in
	// SQLite, the WAL deleted.
	c.StopNode(fi)
	fsmDir := filepath.Join(c.Configs[fi].DataDir, "fsm")
	bpath, spath := filepath.Join(fsmDir, "fsm.bolt"), filepath.Join(fsmDir, "domain.sqlite")
	if err := os.Truncate(bpath, fileSize(bpath)/3); err != nil {
		t.Fatal(err)
	}
	if sf, err := os.OpenFile(spath, os.O_WRONLY, 0); err == nil {
		sf.WriteAt(make([]byte, 16<<10), fileSize(spath)/2&^4095)
		sf.Close()
	}
	os.Remove(spath + "-wal")
	t.Logf("follower %s rebuild of damaged files to /readyz 200: %v", c.Configs[fi].NodeID, c.RestartTimed(fi).Round(time.Millisecond))
	if fileSize(filepath.Join(fsmDir, "set-aside", "fsm.bolt")) == 0 {
		t.Error("the damaged files were not set aside")
	}
	t.Logf("follower %s restart from sound files (checked) to /readyz 200: %v", c.Configs[fi].NodeID, c.RestartTimed(fi).Round(time.Millisecond))
	li, _ = c.WaitLeader(10 * time.Second)
	t.Logf("leader %s restart (a new election) to /readyz 200: %v", c.Configs[li].NodeID, c.RestartTimed(li).Round(time.Millisecond))
	c.AssertIdentical(60 * time.Second)
}
