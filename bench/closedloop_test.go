package bench

import (
	"net/http"

	"masterorder/api/apitest"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The closed loop against a fake store whose cooldown and burst window
// are real: every order from a fresh client id on the next session means
// neither ever binds, so every answer is a new order; the window after
// the warm-up is what is counted, and every order is spread over the
// nodes.
func TestClosedLoopCountsTheWindowOnly(t *testing.T) {
	opt := defaultFakeOptions()
	opt.cooldown = time.Hour // a client id used twice would be refused
	opt.burst = 100 * time.Millisecond
	opt.processDelay = 5 * time.Millisecond
	// Counts every order POST per node (and never answers 503).
	opt.unavailable = map[int]int{0: 1 << 30, 1: 1 << 30, 2: 1 << 30}
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.ClosedLoop = true
	cfg.Concurrency = 4
	cfg.Sessions = 400
	cfg.Warmup = 500 * time.Millisecond
	cfg.Duration = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	rep, err := RunClosedLoop(ctx, cfg)
	if err != nil {
		t.Fatalf("RunClosedLoop: %v", err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log(text.String())
	if len(rep.Rejections) != 0 {
		t.Errorf("rejections %v: the cooldown or burst window bound", rep.Rejections)
	}
	if rep.Orders == 0 || !rep.OK() {
		t.Fatalf("orders %d, replays %d, duplicates %v", rep.Orders, rep.Replays, rep.DuplicateOrderIDs)
	}
	if total := fake.orderCount(); rep.Orders >= total {
		t.Errorf("counted %d orders of %d placed: the warm-up was counted too", rep.Orders, total)
	}
	if rep.MeasuredSeconds < 1.4 || rep.OrdersPerSecond <= 0 {
		t.Errorf("measured %.2fs, %.1f orders/s", rep.MeasuredSeconds, rep.OrdersPerSecond)
	}
	// The callers (this test process) did work in the window: /proc/self
	// counts it.
	if rep.Callers.CPUMicrosPerOrder < 0 || !strings.Contains(text.String(), "callers       cpu ") {
		t.Errorf("callers %+v:\n%s", rep.Callers, text.String())
	}
	fake.mu.Lock()
	posts := cloneMapInt(fake.posts)
	fake.mu.Unlock()
	for n := range opt.nodes {
		if posts[n] == 0 {
			t.Errorf("node %d got no order: %v", n, posts)
		}
	}
	// The fake serves no process metrics: no RSS, no heap.
	if len(rep.Nodes) != opt.nodes || rep.Nodes[0].Source != "metrics" || rep.Nodes[0].HeapInuseBytes != -1 {
		t.Errorf("nodes %+v", rep.Nodes)
	}
	// Spread: by the nodes' own counters every node took orders, and the
	// followers forwarded theirs.
	if rep.Addressing != "spread" || rep.Leaders != nil || !strings.Contains(text.String(), "addressing    spread: round robin over the 3 nodes") {
		t.Errorf("addressing %q, leaders %v", rep.Addressing, rep.Leaders)
	}
	admitted := int64(0)
	for i, n := range rep.Nodes {
		admitted += n.GuestOrders
		if n.GuestOrders <= 0 || (i != opt.leader && n.Forwarded != n.GuestOrders) || (i == opt.leader && n.Forwarded != 0) {
			t.Errorf("node %d admitted %d guest orders, forwarded %d", i, n.GuestOrders, n.Forwarded)
		}
	}
	// Read once the callers stopped: an order cut off then may still be
	// admitted afterwards.
	if placed := int64(fake.orderCount()); admitted < int64(rep.OrdersTotal) || admitted > placed {
		t.Errorf("the nodes admitted %d guest orders, the report has %d, the store holds %d", admitted, rep.OrdersTotal, placed)
	}
}

// runLeaderOnly runs a closed loop with --leader-only against fake,
// every exchange checked against the contract.
func runLeaderOnly(t *testing.T, fake *fakeStore, orders int) *ClosedLoopReport {
	t.Helper()
	cfg := testConfig(fake.urls())
	cfg.ClosedLoop = true
	cfg.LeaderOnly = true
	cfg.Concurrency = 4
	cfg.Sessions = 400
	cfg.Warmup = 100 * time.Millisecond
	cfg.Duration = 0
	cfg.Orders = orders
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	rep, err := RunClosedLoop(ctx, cfg)
	if err != nil {
		t.Fatalf("RunClosedLoop: %v", err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log(text.String())
	if ctx.Err() != nil {
		t.Fatal("the run did not end at --orders")
	}
	if !rep.OK() || rep.OrdersTotal < orders {
		t.Fatalf("orders %d in all, replays %d, duplicates %v", rep.OrdersTotal, rep.Replays, rep.DuplicateOrderIDs)
	}
	if rep.Addressing != "leader" || !strings.Contains(text.String(), "addressing    leader: every order to the Raft leader") {
		t.Errorf("addressing %q:\n%s", rep.Addressing, text.String())
	}
	return rep
}

// --leader-only: every order goes to the node that says it leads (not
// the first URL), as phones reach the store by its name; by the nodes'
// own counters no other node took one and none was forwarded.
func TestClosedLoopLeaderOnly(t *testing.T) {
	opt := defaultFakeOptions()
	opt.cooldown = time.Hour
	opt.processDelay = 2 * time.Millisecond
	opt.leader = 1
	fake := newFake(t, opt)
	rep := runLeaderOnly(t, fake, 200)
	fake.mu.Lock()
	arrived := cloneMapInt(fake.arrived)
	fake.mu.Unlock()
	if arrived[0] != 0 || arrived[2] != 0 || arrived[1] < rep.OrdersTotal {
		t.Errorf("order POSTs per node %v, want all %d at node 1", arrived, rep.OrdersTotal)
	}
	if !slices.Equal(rep.Leaders, []string{fake.urls()[1]}) {
		t.Errorf("leaders %v, want node 1 only", rep.Leaders)
	}
	for i, n := range rep.Nodes {
		lo, hi := int64(0), int64(0)
		if i == 1 {
			lo, hi = int64(rep.OrdersTotal), int64(fake.orderCount())
		}
		if n.GuestOrders < lo || n.GuestOrders > hi || n.Forwarded != 0 {
			t.Errorf("node %d admitted %d guest orders (want %d to %d), forwarded %d (want 0)", i, n.GuestOrders, lo, hi, n.Forwarded)
		}
	}
	var back map[string]any
	path := t.TempDir() + "/r.json"
	if err := rep.WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &back); err != nil || back["addressing"] != "leader" || len(back["leaders"].([]any)) != 1 {
		t.Errorf("JSON %s (%v)", b, err)
	}
}

// The leader changes mid-run and the deposed one refuses orders (a store
// mid-election): the closed loop asks again at the first refusal and goes
// on at the new leader, never spreading to the node that never led.
func TestClosedLoopLeaderOnlyFollowsANewLeader(t *testing.T) {
	opt := defaultFakeOptions()
	opt.cooldown = time.Hour
	opt.processDelay = 2 * time.Millisecond
	opt.leader, opt.switchAfter, opt.switchTo = 0, 80, 2
	opt.followerRefuses = true
	fake := newFake(t, opt)
	rep := runLeaderOnly(t, fake, 300)
	fake.mu.Lock()
	arrived, admitted := cloneMapInt(fake.arrived), cloneMapInt(fake.admitted)
	fake.mu.Unlock()
	if arrived[1] != 0 {
		t.Errorf("node 1 never led but got %d order POSTs", arrived[1])
	}
	if admitted[0] < 80 || admitted[2] == 0 {
		t.Errorf("admitted per node %v: want the first 80 at node 0, the rest at node 2", admitted)
	}
	// Each caller meets the deposed leader's refusal at most once.
	if refused := arrived[0] - admitted[0]; refused > 4 {
		t.Errorf("node 0 refused %d orders after it was deposed, want at most one per caller (4)", refused)
	}
	if !slices.Equal(rep.Leaders, []string{fake.urls()[0], fake.urls()[2]}) {
		t.Errorf("leaders %v, want node 0 then node 2", rep.Leaders)
	}
}

// A deposed leader that forwards (no refusal) is noticed by asking the
// leader whether it still leads.
func TestLeaderTrackerRecheck(t *testing.T) {
	fake := newFake(t, defaultFakeOptions())
	r := newRunner(testConfig(fake.urls()))
	r.token = fake.token
	lt := newLeaderTracker(r, 0)
	ctx := context.Background()
	if changed, err := lt.resolve(ctx, 0, time.Second); err != nil || changed {
		t.Fatalf("first search: changed %v, %v", changed, err)
	}
	if i, _ := lt.current(); i != 0 {
		t.Fatalf("leader %d, want 0", i)
	}
	lt.stillLeader(ctx)
	if i, _ := lt.current(); i != 0 || len(lt.leaders()) != 1 {
		t.Fatalf("leader %d, leaders %v after a recheck with no change", i, lt.leaders())
	}
	fake.mu.Lock()
	fake.leader, fake.term = 2, fake.term+1
	fake.mu.Unlock()
	lt.stillLeader(ctx)
	if i, _ := lt.current(); i != 2 || !slices.Equal(lt.leaders(), []string{fake.urls()[0], fake.urls()[2]}) {
		t.Errorf("leader %d, leaders %v after the leadership moved to node 2", i, lt.leaders())
	}
	// A search that another one overtook keeps that one's answer.
	_, g := lt.current()
	fake.mu.Lock()
	fake.leader = 1
	fake.mu.Unlock()
	if changed, err := lt.resolve(ctx, g-1, time.Second); err != nil || changed {
		t.Errorf("an overtaken search: changed %v, %v", changed, err)
	}
	if i, _ := lt.current(); i != 2 {
		t.Errorf("an overtaken search moved the leader to %d", i)
	}
	// No leader at all: an error naming it, within the wait.
	fake.mu.Lock()
	fake.leader = -1 // an election: every node says follower
	fake.mu.Unlock()
	_, g = lt.current()
	if _, err := lt.resolve(ctx, g, 300*time.Millisecond); !errors.Is(err, errNoLeader) {
		t.Errorf("no leader: %v", err)
	}
	// The callers refused meanwhile do not each search as long again:
	// they keep the last leader.
	if changed, err := lt.resolve(ctx, g, time.Hour); changed || err != nil {
		t.Errorf("a caller waiting on a failed search: changed %v, %v", changed, err)
	}
	if i, _ := lt.current(); i != 2 {
		t.Errorf("leader %d after a failed search, want the last one (2)", i)
	}
}

func TestPickLeader(t *testing.T) {
	f := &nodeRole{State: "follower", Term: 9}
	l := func(term uint64) *nodeRole { return &nodeRole{State: "leader", Term: term} }
	stale := &nodeRole{State: "leader", Term: 9, Stale: true}
	for _, c := range []struct {
		roles []*nodeRole
		want  int
	}{
		{[]*nodeRole{f, l(3), f}, 1},
		{[]*nodeRole{nil, f, l(3)}, 2},     // a node that did not answer
		{[]*nodeRole{l(3), f, l(4)}, 2},    // an old leader not yet deposed
		{[]*nodeRole{stale, l(3), nil}, 1}, // cut off from its quorum
		{[]*nodeRole{f, nil, {State: "candidate"}}, -1},
	} {
		if got := pickLeader(c.roles); got != c.want {
			t.Errorf("pickLeader(%v) = %d, want %d", c.roles, got, c.want)
		}
	}
}

func TestClosedLoopFlags(t *testing.T) {
	cfg, _, err := ParseFlags([]string{"--closed-loop", "--concurrency", "64", "--duration", "30s", "--no-progress"}, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("closed loop without --url: %v", err)
	}
	if !cfg.ClosedLoop || cfg.Concurrency != 64 || cfg.Sessions != defaultClosedLoopSessions || cfg.Warmup != defaultWarmup || cfg.LeaderOnly {
		t.Errorf("cfg %+v", cfg)
	}
	if cfg, _, err := ParseFlags([]string{"--closed-loop", "--concurrency", "8", "--duration", "5s", "--leader-only"}, &bytes.Buffer{}); err != nil || !cfg.LeaderOnly {
		t.Errorf("--leader-only: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"--closed-loop", "--concurrency", "8"}, // no duration
		{"--closed-loop", "--duration", "5s"},   // no concurrency
		{"--closed-loop", "--concurrency", "8", "--duration", "5s", "--sessions", "0"},
		{"--closed-loop", "--concurrency", "8", "--duration", "5s", "--url", "http://x:1", "--data-dir", "/tmp/x"},
		{"--closed-loop", "--concurrency", "8", "--orders", "-1"},
		{"--closed-loop", "--concurrency", "8", "--orders", "100", "--cpuprofile", "/tmp/x"}, // a profile needs a length
		{"--leader-only", "--url", "http://x:1"},                                             // for the closed loop only
	} {
		if _, _, err := ParseFlags(args, &bytes.Buffer{}); !isConfigError(err) {
			t.Errorf("%v: err %v, want a config error", args, err)
		}
	}
}

// --orders without --duration: the run ends once that many new orders
// were answered in all, the warm-up's included.
func TestClosedLoopStopsAfterOrders(t *testing.T) {
	cfg, _, err := ParseFlags([]string{"--closed-loop", "--concurrency", "4", "--orders", "100000", "--no-progress"}, &bytes.Buffer{})
	if err != nil || cfg.Orders != 100000 || cfg.Duration != 0 {
		t.Fatalf("--orders without --duration: %+v, %v", cfg, err)
	}
	opt := defaultFakeOptions()
	opt.cooldown = time.Hour
	opt.burst = 100 * time.Millisecond
	fake := newFake(t, opt)
	cfg = testConfig(fake.urls())
	cfg.ClosedLoop = true
	cfg.Concurrency = 4
	cfg.Sessions = 400
	cfg.Warmup = 100 * time.Millisecond
	cfg.Duration = 0
	cfg.Orders = 150
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := RunClosedLoop(ctx, cfg)
	if err != nil {
		t.Fatalf("RunClosedLoop: %v", err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log(text.String())
	if ctx.Err() != nil {
		t.Fatal("the run did not end at --orders")
	}
	// The callers in flight when the count was reached still finish.
	if rep.OrdersTotal < 150 || rep.OrdersTotal > 150+cfg.Concurrency || rep.StopAfterOrders != 150 {
		t.Errorf("orders in all %d (stop after %d), want 150 to %d", rep.OrdersTotal, rep.StopAfterOrders, 150+cfg.Concurrency)
	}
	if rep.Orders > rep.OrdersTotal || !rep.OK() {
		t.Errorf("window %d of %d, replays %d, duplicates %v", rep.Orders, rep.OrdersTotal, rep.Replays, rep.DuplicateOrderIDs)
	}
	if placed := fake.orderCount(); placed < rep.OrdersTotal {
		t.Errorf("the store has %d orders, the report %d", placed, rep.OrdersTotal)
	}
}

// The per order figures are microseconds and bytes per order per node,
// and their sum over the nodes; an unknown node makes the sum unknown.
func TestClosedLoopReportPerOrderFigures(t *testing.T) {
	u := &usageProbe{base: "http://n1", pid: 7, cpu: 300 * time.Millisecond, wrote: 3_000_000, peakRSS: 90 << 20, rss: 80 << 20, heapInuse: 12 << 20,
		// 10 s: 2,000 log writes of 12 entries taking 5 s in all; 24,000
		// commits as leader taking 360 s in all.
		raft: raftCounts{known: true, writes: 2000, writeSeconds: 5, commits: 24000, commitSecs: 360, applied: 24000}, raftWindow: 10 * time.Second}
	n1 := u.result(1000)
	if n1.CPUMicrosPerOrder != 300 || n1.WrittenBytesPerOrder != 3000 || n1.CPUSeconds != 0.3 || n1.RSSBytes != 80<<20 || n1.HeapInuseBytes != 12<<20 {
		t.Fatalf("node figures %+v", n1)
	}
	if n1.LogWritesPerSecond != 200 || n1.EntriesPerLogWrite != 12 || n1.LogWriteMillis != 2.5 || n1.CommitMillis != 15 {
		t.Fatalf("node's Raft figures %+v", n1)
	}
	n2 := NodeUsage{URL: "http://n2", Source: "proc", CPUSeconds: 0.25, CPUMicrosPerOrder: 250.4, WrittenBytes: 1, WrittenBytesPerOrder: 1500, RSSBytes: 1 << 20, PeakRSSBytes: 2 << 20, HeapInuseBytes: -1,
		LogWritesPerSecond: 120, EntriesPerLogWrite: 20, LogWriteMillis: 3.1}
	rep := &ClosedLoopReport{RunID: "r", URLs: []string{"http://n1", "http://n2"}, Orders: 1000, OrdersTotal: 1200, OrdersPerSecond: 100,
		Nodes: []NodeUsage{n1, n2}, Rejections: map[string]int{}}
	rep.Cluster = clusterUsage(rep.Nodes)
	if rep.Cluster.CPUMicrosPerOrder != 550.4 || rep.Cluster.WrittenBytesPerOrder != 4500 {
		t.Errorf("cluster %+v, want 550.4 µs and 4500 B per order", rep.Cluster)
	}
	// 70 ms of the bench's own CPU over 1,000 orders.
	rep.Callers = callersUsage(2*time.Second, 2070*time.Millisecond, true, true, rep.Orders)
	if rep.Callers.CPUMicrosPerOrder != 70 {
		t.Errorf("callers %+v, want 70 µs per order", rep.Callers)
	}
	for _, c := range []CallersUsage{callersUsage(0, time.Second, false, true, 10), callersUsage(0, time.Second, true, true, 0)} {
		if c.CPUMicrosPerOrder != -1 {
			t.Errorf("callers without /proc or orders %+v, want -1", c)
		}
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{
		"node http://n1  cpu 300 µs/order  written 2.9 MiB, 3000 B/order  RSS 80.0 MiB at the end (Go heap 12.0 MiB), peak 90.0 MiB  (proc)",
		"node http://n2  cpu 250 µs/order  written 0.0 MiB, 1500 B/order  RSS 1.0 MiB at the end, peak 2.0 MiB  (proc)",
		"cluster       cpu 550 µs/order  written 4500 B/order  (the 2 nodes summed)",
		"callers       cpu 70 µs/order  (this process: the phones' HTTP and JSON, and the checks)",
		"raft log 200 writes/s, 12.0 entries and 2.50 ms each; as leader, proposed to applied 15.0 ms\n",
		"raft log 120 writes/s, 20.0 entries and 3.10 ms each\n",
		"1000 (100.0 orders/s); 1200 in all",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	path := t.TempDir() + "/r.json"
	if err := rep.WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var back struct {
		Nodes   []map[string]any   `json:"nodes"`
		Cluster map[string]float64 `json:"cluster"`
		Callers map[string]float64 `json:"callers"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Nodes[0]["logWriteMillis"] != 2.5 || back.Nodes[0]["commitMillis"] != 15.0 || back.Nodes[0]["logWritesPerSecond"] != 200.0 || back.Nodes[0]["entriesPerLogWrite"] != 12.0 {
		t.Errorf("JSON Raft figures %s", b)
	}
	if back.Nodes[0]["cpuMicrosPerOrder"] != 300.0 || back.Nodes[0]["rssBytes"] != float64(80<<20) || back.Nodes[0]["heapInuseBytes"] != float64(12<<20) || back.Cluster["cpuMicrosPerOrder"] != 550.4 || back.Cluster["writtenBytesPerOrder"] != 4500 {
		t.Errorf("JSON %s", b)
	}
	if back.Callers["cpuMicrosPerOrder"] != 70 {
		t.Errorf("JSON callers %s", b)
	}
	if _, old := back.Nodes[0]["cpuMsPerOrder"]; old {
		t.Errorf("JSON still has cpuMsPerOrder: %s", b)
	}
	// Against --url nodes nothing is known of CPU and writes.
	unknown := (&usageProbe{base: "http://n3", wrote: -1, cpu: -1, heapInuse: -1}).result(10)
	if c := clusterUsage([]NodeUsage{n1, unknown}); c.CPUMicrosPerOrder != -1 || c.WrittenBytesPerOrder != -1 {
		t.Errorf("cluster with an unknown node %+v, want -1", c)
	}
	rep.Nodes, rep.Cluster = []NodeUsage{unknown}, clusterUsage([]NodeUsage{unknown})
	text.Reset()
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "cluster       cpu n/a  written n/a") {
		t.Errorf("unknown cluster figures:\n%s", text.String())
	}
	if unknown.LogWriteMillis != -1 || unknown.CommitMillis != -1 || strings.Contains(text.String(), "raft log") {
		t.Errorf("unknown Raft figures %+v:\n%s", unknown, text.String())
	}
}

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	if rss, err := procStatusBytes(pid, "VmHWM"); err != nil || rss < 1<<20 {
		t.Errorf("VmHWM %d, %v", rss, err)
	}
	if _, err := procIOBytes(pid, "write_bytes"); err != nil {
		t.Errorf("write_bytes: %v", err)
	}
	c0, err := procCPU(pid)
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	if c1, err1 := procCPU(pid); err != nil || err1 != nil || c1 < c0 || c0 <= 0 {
		t.Errorf("procCPU %s then %s: %v %v", c0, c1, err, err1)
	}
	text := "# HELP process_resident_memory_bytes x\nprocess_resident_memory_bytes_total 1\nprocess_resident_memory_bytes 4.2e+07\n"
	if v, err := promSample(bufio.NewScanner(strings.NewReader(text)), "process_resident_memory_bytes"); err != nil || v != 42000000 {
		t.Errorf("promSample %d, %v", v, err)
	}
}

func cloneMapInt(m map[int]int) map[int]int {
	c := make(map[int]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// --cpuprofile also profiles the callers (this process) over the window;
// a node that serves no profile (the fake) is a note, not a failure.
func TestClosedLoopProfilesTheCallers(t *testing.T) {
	opt := defaultFakeOptions()
	opt.cooldown = time.Hour
	opt.burst = 100 * time.Millisecond
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.ClosedLoop = true
	cfg.Concurrency = 2
	cfg.Sessions = 200
	cfg.Warmup = 100 * time.Millisecond
	cfg.Duration = time.Second
	cfg.CPUProfileDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := RunClosedLoop(ctx, cfg)
	if err != nil {
		t.Fatalf("RunClosedLoop: %v", err)
	}
	want := filepath.Join(cfg.CPUProfileDir, "callers.pprof")
	if !slices.Contains(rep.Profiles, want) {
		t.Fatalf("profiles %v, notes %v: want %s", rep.Profiles, rep.Notes, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Size() == 0 {
		t.Errorf("callers.pprof: %v, %v", fi, err)
	}
}
