package bench

import (
	"net/http"

	"masterorder/api/apitest"

	"bufio"
	"bytes"
	"context"
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
	if len(rep.Nodes) != opt.nodes || rep.Nodes[0].Source != "metrics" {
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
	} {
		if _, _, err := ParseFlags(args, &bytes.Buffer{}); !isConfigError(err) {
			t.Errorf("%v: err %v, want a config error", args, err)
		}
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
