package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
)

func testConfig(urls []string) Config {
	return Config{
		URLs:           urls,
		Tables:         2,
		GuestsPerTable: 1,
		OrdersPerGuest: 2,
		StaffPassword:  "pw",
		Seed:           42,
		RequestTimeout: 3 * time.Second,
	}
}

func runBench(t *testing.T, cfg Config) *Report {
	t.Helper()
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Logf("run took %s\n%s", time.Since(start).Round(time.Millisecond), text.String())
	return rep
}

func textOf(r *Report) string {
	var b bytes.Buffer
	r.WriteText(&b)
	return b.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// The whole client under every fault at once, against a store that gets
// everything right (and is itself unreliable: one node answers 503 now and
// then, another loses answers after committing): every intended order is
// one order, acknowledged, present on every node.
func TestRunCleanStoreWithAllFaults(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.unavailable = map[int]int{0: 4}
	opt.dropAfterCommit = 1
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.Tables, cfg.GuestsPerTable, cfg.OrdersPerGuest = 4, 2, 3
	cfg.DoubleTap, cfg.KeyChange, cfg.LostResponse = 0.3, 0.3, 0.3
	var progress bytes.Buffer
	cfg.Progress = &progress // written only by the progress goroutine, read after Run

	rep := runBench(t, cfg)

	want := cfg.Tables * cfg.GuestsPerTable * cfg.OrdersPerGuest
	if !rep.OK() {
		t.Fatalf("OK() = false: duplicates %v lost %v problems %v", rep.Duplicates, rep.Lost, rep.Problems)
	}
	if rep.Intended != want || rep.Acknowledged != want || rep.Failed != 0 {
		t.Errorf("intended %d acknowledged %d failed %d (%v), want %d/%d/0", rep.Intended, rep.Acknowledged, rep.Failed, rep.FailedReasons, want, want)
	}
	if len(rep.AcknowledgedOrders) != want {
		t.Errorf("%d acknowledged orders listed, want %d", len(rep.AcknowledgedOrders), want)
	}
	if got := fake.orderCount(); got != want {
		t.Errorf("the store holds %d orders, want one per intended order (%d)", got, want)
	}
	if rep.Faults.LostResponses == 0 || rep.Faults.DoubleTaps == 0 || rep.Faults.KeyChanges == 0 {
		t.Errorf("seed 42 should inject every fault: %+v", rep.Faults)
	}
	if rep.Replays < rep.Faults.LostResponses {
		t.Errorf("replays %d < lost responses %d: every resend after a lost response is a replay", rep.Replays, rep.Faults.LostResponses)
	}
	if rep.Rejections["NO_QUORUM"] == 0 {
		t.Errorf("node 0's 503s were not seen: %v", rep.Rejections)
	}
	if rep.Rejections[reasonCooldown] == 0 {
		t.Errorf("no cooldown met, the guests order back to back: %v", rep.Rejections)
	}
	if rep.LatencyMs.P50 <= 0 || rep.LatencyMs.Max < rep.LatencyMs.P99 || rep.RequestLatencyMs.P50 <= 0 {
		t.Errorf("latency %+v request latency %+v", rep.LatencyMs, rep.RequestLatencyMs)
	}
	if rep.OrdersPerSecond <= 0 {
		t.Errorf("orders/s %v", rep.OrdersPerSecond)
	}
	for _, u := range fake.urls() {
		if rep.OrdersPerNode[u] != want {
			t.Errorf("verification saw %d orders on %s, want %d", rep.OrdersPerNode[u], u, want)
		}
	}
	text := textOf(rep)
	if lastLine(text) != "duplicates=0 lost=0" {
		t.Errorf("last line %q", lastLine(text))
	}
	if !strings.Contains(text, "more --tables") {
		t.Errorf("the text report should explain that throughput needs more tables:\n%s", text)
	}
	if !strings.Contains(progress.String(), "\rbench ") || !strings.HasSuffix(progress.String(), "\n") {
		t.Errorf("progress output %q", progress.String())
	}

	// JSON carries the same, with empty lists rather than null.
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"duplicates": []`, `"lost": []`, `"problems": []`, `"p99":`} {
		if !strings.Contains(js.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, js.String())
		}
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Acknowledged != rep.Acknowledged || back.LatencyMs != rep.LatencyMs {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

// A double tap meets the first request still in flight: 409
// DUPLICATE_IDEMPOTENCY_KEY, reconciled through the history, one order.
func TestDoubleTapReconcilesThroughHistory(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.processDelay = 150 * time.Millisecond
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.DoubleTap = 1
	rep := runBench(t, cfg)
	if !rep.OK() || rep.Acknowledged != 4 || fake.orderCount() != 4 {
		t.Fatalf("OK %v acknowledged %d store %d: %v %v %v", rep.OK(), rep.Acknowledged, fake.orderCount(), rep.Duplicates, rep.Lost, rep.Problems)
	}
	if rep.Rejections[reasonDuplicateKey] == 0 || rep.Reconciled == 0 {
		t.Errorf("expected 409 %s reconciled through the history: rejections %v reconciled %d", reasonDuplicateKey, rep.Rejections, rep.Reconciled)
	}
	if rep.Faults.AbandonedTaps != 0 {
		t.Errorf("%d double taps were never answered", rep.Faults.AbandonedTaps)
	}
}

// A key-change tap against a correct store is a payload replay: still one
// order per intended order.
func TestKeyChangeIsAPayloadReplay(t *testing.T) {
	t.Parallel()
	fake := newFake(t, defaultFakeOptions())
	cfg := testConfig(fake.urls())
	cfg.KeyChange = 1
	rep := runBench(t, cfg)
	if !rep.OK() || fake.orderCount() != rep.Intended || rep.Acknowledged != rep.Intended {
		t.Fatalf("OK %v intended %d acknowledged %d store %d: %v %v", rep.OK(), rep.Intended, rep.Acknowledged, fake.orderCount(), rep.Duplicates, rep.Problems)
	}
	if rep.Faults.KeyChanges != rep.Intended || rep.Replays < rep.Intended {
		t.Errorf("every order had a key-change tap answered by a replay: faults %+v replays %d", rep.Faults, rep.Replays)
	}
}

// A store without the payload window turns every key-change tap into a
// second order; verification groups orders by intended order, not only by
// key, and reports each extra one.
func TestKeyChangeWithoutPayloadWindowIsADuplicate(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.noPayloadWindow = true
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.KeyChange = 1
	rep := runBench(t, cfg)
	if rep.OK() {
		t.Fatal("OK() = true for a store that made two orders per intended order")
	}
	if len(rep.Duplicates) != rep.Intended || fake.orderCount() != 2*rep.Intended {
		t.Errorf("duplicates %v for %d intended orders, store holds %d", rep.Duplicates, rep.Intended, fake.orderCount())
	}
	if len(rep.Lost) != 0 || len(rep.Problems) != 0 {
		t.Errorf("lost %v problems %v", rep.Lost, rep.Problems)
	}
}

// A store that stores one order twice (same requestId): duplicates=1.
func TestDuplicateOrderIsReported(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.duplicateFirst = true
	fake := newFake(t, opt)
	rep := runBench(t, testConfig(fake.urls()))
	if rep.OK() {
		t.Fatal("OK() = true with a duplicate order")
	}
	if len(rep.Duplicates) != 1 || len(rep.Lost) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("duplicates %v lost %v problems %v", rep.Duplicates, rep.Lost, rep.Problems)
	}
	// The duplicate is the order nobody was told about.
	fake.mu.Lock()
	extra := fake.orders[1].OrderID
	fake.mu.Unlock()
	if rep.Duplicates[0] != extra {
		t.Errorf("duplicate %d, want the injected %d", rep.Duplicates[0], extra)
	}
	if got := lastLine(textOf(rep)); !strings.HasPrefix(got, "duplicates=1 lost=0 duplicate-order-ids=") {
		t.Errorf("last line %q", got)
	}
}

// A node that does not have an acknowledged order: lost=1, naming the node.
func TestLostOrderIsReported(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.loseOnNode = 2
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.verifySettle = time.Second
	rep := runBench(t, cfg)
	if rep.OK() {
		t.Fatal("OK() = true with a lost order")
	}
	if len(rep.Lost) != 1 || len(rep.Duplicates) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("lost %+v duplicates %v problems %v", rep.Lost, rep.Duplicates, rep.Problems)
	}
	l := rep.Lost[0]
	fake.mu.Lock()
	first := fake.orders[0]
	fake.mu.Unlock()
	if l.OrderID != first.OrderID || l.RequestID != *first.RequestID || !slices.Equal(l.MissingOn, []string{fake.urls()[2]}) {
		t.Errorf("lost %+v, want order %d missing on %s", l, first.OrderID, fake.urls()[2])
	}
	if got := lastLine(textOf(rep)); got != "duplicates=0 lost=1 lost-order-ids="+strconv.FormatInt(first.OrderID, 10) {
		t.Errorf("last line %q", got)
	}
}

// A node that is down: guests fail over and every order is acknowledged,
// but verification cannot read that node, so the run does not pass.
func TestDeadNodeFailoverAndIncompleteVerification(t *testing.T) {
	t.Parallel()
	fake := newFake(t, defaultFakeOptions())
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	cfg := testConfig(append(fake.urls()[:2], deadURL))
	cfg.GuestsPerTable = 2 // one guest's home is the dead node
	cfg.verifySettle, cfg.replicationWait = 500*time.Millisecond, 300*time.Millisecond
	rep := runBench(t, cfg)
	if rep.Acknowledged != rep.Intended || rep.Intended != 8 || fake.orderCount() != 8 {
		t.Errorf("intended %d acknowledged %d store %d (failed %v)", rep.Intended, rep.Acknowledged, fake.orderCount(), rep.FailedReasons)
	}
	if rep.NetworkErrors == 0 {
		t.Error("no network errors against a dead node")
	}
	if rep.OK() || len(rep.Problems) == 0 || !strings.Contains(strings.Join(rep.Problems, "\n"), deadURL) {
		t.Errorf("OK %v problems %v: an unreadable node must fail verification", rep.OK(), rep.Problems)
	}
	if len(rep.Duplicates) != 0 || len(rep.Lost) != 0 {
		t.Errorf("duplicates %v lost %v", rep.Duplicates, rep.Lost)
	}
}

// --orders-per-guest 0 runs until --duration.
func TestDurationBoundRun(t *testing.T) {
	t.Parallel()
	opt := defaultFakeOptions()
	opt.cooldown, opt.burst = 0, 0
	fake := newFake(t, opt)
	cfg := testConfig(fake.urls())
	cfg.OrdersPerGuest = 0
	cfg.Duration = 1500 * time.Millisecond
	cfg.GuestsPerTable = 2
	start := time.Now()
	rep := runBench(t, cfg)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1.5 s run took %s", d)
	}
	if !rep.OK() || rep.Intended < 4 || rep.Acknowledged != rep.Intended || fake.orderCount() != rep.Intended {
		t.Errorf("OK %v intended %d acknowledged %d store %d", rep.OK(), rep.Intended, rep.Acknowledged, fake.orderCount())
	}
}

func TestSetupFailsWithWrongPassword(t *testing.T) {
	t.Parallel()
	fake := newFake(t, defaultFakeOptions())
	cfg := testConfig(fake.urls())
	cfg.StaffPassword = "wrong"
	rep, err := Run(context.Background(), cfg)
	if err == nil || rep != nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("Run = %v, %v; want a login error", rep, err)
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	cfg, js, err := ParseFlags([]string{"--url", "http://127.0.0.1:8080/,http://127.0.0.1:8081", "http://127.0.0.1:8082",
		"--tables", "40", "--duration", "30s", "--double-tap", "0.5", "--json", "out.json", "--no-progress"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.URLs, []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081", "http://127.0.0.1:8082"}) {
		t.Errorf("URLs %q", cfg.URLs)
	}
	if cfg.Tables != 40 || cfg.GuestsPerTable != 4 || cfg.OrdersPerGuest != 5 || cfg.Duration != 30*time.Second ||
		cfg.DoubleTap != 0.5 || cfg.KeyChange != 0.1 || cfg.LostResponse != 0.1 || cfg.StaffPassword != "demo" ||
		js != "out.json" || cfg.Progress != nil {
		t.Errorf("cfg %+v json %q", cfg, js)
	}
	var stderr bytes.Buffer
	cfg, _, err = ParseFlags([]string{"-url", "http://a:1"}, &stderr)
	if err != nil || cfg.Progress != &stderr {
		t.Errorf("progress should default to stderr: %v", err)
	}

	for _, bad := range [][]string{
		{},
		{"--url", "ftp://x"},
		{"--url", "http://a:1", "--tables", "0"},
		{"--url", "http://a:1", "--double-tap", "1.5"},
		{"--url", "http://a:1", "--orders-per-guest", "0"},
		{"--url", "http://a:1", "--guests-per-table", "10", "--orders-per-guest", "20"},
		{"--url", "http://a:1", "--staff-password", ""},
	} {
		_, _, err := ParseFlags(bad, io.Discard)
		if !isConfigError(err) {
			t.Errorf("ParseFlags(%q) = %v, want a *ConfigError", bad, err)
		}
	}
	if _, _, err := ParseFlags([]string{"--nope"}, io.Discard); err == nil || isConfigError(err) {
		t.Errorf("unknown flag: %v", err)
	}
	if _, _, err := ParseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestMainExitCodes(t *testing.T) {
	t.Parallel()
	if code := Main(context.Background(), []string{"--tables", "1"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("no --url: exit %d, want 2", code)
	}
	opt := defaultFakeOptions()
	opt.cooldown, opt.burst = 0, 0
	fake := newFake(t, opt)
	js := filepath.Join(t.TempDir(), "r.json")
	args := []string{"--url", strings.Join(fake.urls(), ","), "--tables", "2", "--guests-per-table", "1", "--orders-per-guest", "1",
		"--staff-password", "pw", "--no-progress", "--json", js}
	var out bytes.Buffer
	if code := Main(context.Background(), args, &out, io.Discard); code != 0 {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
	b, err := os.ReadFile(js)
	if err != nil || !bytes.Contains(b, []byte(`"acknowledged": 2`)) {
		t.Errorf("--json file: %v %s", err, b)
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": -1, "3": 3 * time.Second, " 0 ": 0, "-1": -1, "soon": -1,
		"Thu, 01 Jan 2026 12:00:05 GMT": 5 * time.Second,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	for range 100 {
		if k := newUUIDv4(); !fakeUUIDv4.MatchString(k) {
			t.Fatalf("%q is not a UUID v4", k)
		}
	}
	a := []line{{MenuID: "b", Quantity: 1, Toppings: []string{"y", "x"}}, {MenuID: "a", Quantity: 2, Toppings: []string{}}, {MenuID: "b", Quantity: 2, Toppings: []string{"x", "y"}}}
	b := []line{{MenuID: "a", Quantity: 2}, {MenuID: "b", Quantity: 3, Toppings: []string{"x", "y"}}}
	if cartKey(a) != cartKey(b) {
		t.Errorf("cartKey %q != %q", cartKey(a), cartKey(b))
	}
	// Options and the note are part of the cart, as the server fingerprints it.
	withNote := []line{{MenuID: "a", Quantity: 1, Options: map[string][]string{"x": {"2", "1"}}, Note: "ネギ抜き"}}
	same := []line{{MenuID: "a", Quantity: 1, Options: map[string][]string{"x": {"1", "2"}, "y": {}}, Note: " ネギ抜き "}}
	other := []line{{MenuID: "a", Quantity: 1, Options: map[string][]string{"x": {"1", "2"}}, Note: "ネギ多め"}}
	if cartKey(withNote) != cartKey(same) || cartKey(withNote) == cartKey(other) || cartKey(withNote) == cartKey([]line{{MenuID: "a", Quantity: 1}}) {
		t.Errorf("cartKey with options and notes: %q %q %q", cartKey(withNote), cartKey(same), cartKey(other))
	}
	l := latencyOf([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10})
	if l != (Latency{P50: 5, P95: 10, P99: 10, Max: 10}) {
		t.Errorf("latency %+v", l)
	}
}

// Interrupting the order phase still verifies what was done.
func TestInterruptedRunStillVerifies(t *testing.T) {
	t.Parallel()
	fake := newFake(t, defaultFakeOptions())
	cfg := testConfig(fake.urls())
	cfg.GuestsPerTable, cfg.OrdersPerGuest = 2, 20
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("an interrupted run took %s", d)
	}
	if !rep.Interrupted || rep.Intended == 0 || rep.Intended >= 80 || !rep.OK() {
		t.Errorf("interrupted %v intended %d OK %v: %v %v %v", rep.Interrupted, rep.Intended, rep.OK(), rep.Duplicates, rep.Lost, rep.Problems)
	}
	if got := rep.OrdersPerNode[fake.urls()[0]]; got != fake.orderCount() {
		t.Errorf("verification saw %d orders, the store holds %d", got, fake.orderCount())
	}
	if !strings.Contains(textOf(rep), "INTERRUPTED") {
		t.Error("the text report does not say the run was interrupted")
	}
}
