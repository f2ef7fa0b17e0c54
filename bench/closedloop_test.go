package bench

import (
	"net/http"

	"masterorder/api/apitest"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
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
}

func TestClosedLoopFlags(t *testing.T) {
	cfg, _, err := ParseFlags([]string{"--closed-loop", "--concurrency", "64", "--duration", "30s", "--no-progress"}, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("closed loop without --url: %v", err)
	}
	if !cfg.ClosedLoop || cfg.Concurrency != 64 || cfg.Sessions != defaultClosedLoopSessions || cfg.Warmup != defaultWarmup {
		t.Errorf("cfg %+v", cfg)
	}
	for _, args := range [][]string{
		{"--closed-loop", "--concurrency", "8"}, // no duration
		{"--closed-loop", "--duration", "5s"},   // no concurrency
		{"--closed-loop", "--concurrency", "8", "--duration", "5s", "--sessions", "0"},
		{"--closed-loop", "--concurrency", "8", "--duration", "5s", "--url", "http://x:1", "--data-dir", "/tmp/x"},
		{"--closed-loop", "--concurrency", "8", "--orders", "-1"},
		{"--closed-loop", "--concurrency", "8", "--orders", "100", "--cpuprofile", "/tmp/x"}, // a profile needs a length
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
	u := &usageProbe{base: "http://n1", pid: 7, cpu: 300 * time.Millisecond, wrote: 3_000_000, peakRSS: 90 << 20, rss: 80 << 20, heapInuse: 12 << 20}
	n1 := u.result(1000)
	if n1.CPUMicrosPerOrder != 300 || n1.WrittenBytesPerOrder != 3000 || n1.CPUSeconds != 0.3 || n1.RSSBytes != 80<<20 || n1.HeapInuseBytes != 12<<20 {
		t.Fatalf("node figures %+v", n1)
	}
	n2 := NodeUsage{URL: "http://n2", Source: "proc", CPUSeconds: 0.25, CPUMicrosPerOrder: 250.4, WrittenBytes: 1, WrittenBytesPerOrder: 1500, RSSBytes: 1 << 20, PeakRSSBytes: 2 << 20, HeapInuseBytes: -1}
	rep := &ClosedLoopReport{RunID: "r", URLs: []string{"http://n1", "http://n2"}, Orders: 1000, OrdersTotal: 1200, OrdersPerSecond: 100,
		Nodes: []NodeUsage{n1, n2}, Rejections: map[string]int{}}
	rep.Cluster = clusterUsage(rep.Nodes)
	if rep.Cluster.CPUMicrosPerOrder != 550.4 || rep.Cluster.WrittenBytesPerOrder != 4500 {
		t.Errorf("cluster %+v, want 550.4 µs and 4500 B per order", rep.Cluster)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{
		"node http://n1  cpu 300 µs/order  written 2.9 MiB, 3000 B/order  RSS 80.0 MiB at the end (Go heap 12.0 MiB), peak 90.0 MiB  (proc)",
		"node http://n2  cpu 250 µs/order  written 0.0 MiB, 1500 B/order  RSS 1.0 MiB at the end, peak 2.0 MiB  (proc)",
		"cluster       cpu 550 µs/order  written 4500 B/order  (the 2 nodes summed)",
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
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Nodes[0]["cpuMicrosPerOrder"] != 300.0 || back.Nodes[0]["rssBytes"] != float64(80<<20) || back.Nodes[0]["heapInuseBytes"] != float64(12<<20) || back.Cluster["cpuMicrosPerOrder"] != 550.4 || back.Cluster["writtenBytesPerOrder"] != 4500 {
		t.Errorf("JSON %s", b)
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
