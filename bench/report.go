package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Latency is a distribution in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Faults counts the client faults injected.
type Faults struct {
	DoubleTaps    int `json:"doubleTaps"`    // same request sent twice concurrently
	KeyChanges    int `json:"keyChanges"`    // concurrent second tap, new key, same cart
	LostResponses int `json:"lostResponses"` // first response dropped, resent
	// AbandonedTaps is extra taps (double tap, key change) that ended
	// without an acknowledgment of their own; the intended order may still
	// have been acknowledged through its first tap.
	AbandonedTaps int `json:"abandonedTaps"`
}

// LostOrder is an acknowledged order that a node does not have.
type LostOrder struct {
	OrderID   int64    `json:"orderId"`
	RequestID string   `json:"requestId"`
	SessionID string   `json:"sessionId"`
	TableID   string   `json:"tableId"`
	MissingOn []string `json:"missingOn"`
}

// AckedOrder is an order a guest was told succeeded.
type AckedOrder struct {
	OrderID   int64  `json:"orderId"`
	RequestID string `json:"requestId"`
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
}

// Report is the outcome of one run. Duplicates, Lost and Problems are empty
// (never null in JSON) when the store passed.
type Report struct {
	RunID          string    `json:"runId"`
	URLs           []string  `json:"urls"`
	Tables         int       `json:"tables"`
	GuestsPerTable int       `json:"guestsPerTable"`
	OrdersPerGuest int       `json:"ordersPerGuest"`
	Seed           int64     `json:"seed"`
	StartedAt      time.Time `json:"startedAt"` // of the order phase
	Interrupted    bool      `json:"interrupted"`

	// Intended is the orders guests meant to place; Acknowledged how many
	// of them were confirmed (each is one new order); Failed the rest, by
	// the last reason of their first tap in FailedReasons.
	Intended      int            `json:"intended"`
	Acknowledged  int            `json:"acknowledged"`
	Failed        int            `json:"failed"`
	FailedReasons map[string]int `json:"failedReasons"`
	// Replays is 200 answers marked idempotentReplay (same key or same
	// cart); Reconciled is acknowledgments found through the order history
	// after a 409.
	Replays    int `json:"replays"`
	Reconciled int `json:"reconciled"`
	// Requests is order POSTs sent; NetworkErrors those without an answer
	// (not counting the dropped ones of --lost-response).
	Requests      int `json:"requests"`
	NetworkErrors int `json:"networkErrors"`
	// Rejections counts every non-200 answer to an order POST by reason
	// code (HTTP_<status> without one), the transient ones included.
	Rejections map[string]int `json:"rejections"`
	Faults     Faults         `json:"faults"`

	// OrderPhaseSeconds is the wall time of the order phase;
	// OrdersPerSecond is Acknowledged / OrderPhaseSeconds.
	OrderPhaseSeconds float64 `json:"orderPhaseSeconds"`
	OrdersPerSecond   float64 `json:"ordersPerSecond"`
	// LatencyMs is per acknowledged intended order, first send →
	// acknowledged, retries and cooldown waits included;
	// RequestLatencyMs is per order POST that was answered 200.
	LatencyMs        Latency `json:"latencyMs"`
	RequestLatencyMs Latency `json:"requestLatencyMs"`

	// Verification: every session read back from every node.
	VerifiedSessions int            `json:"verifiedSessions"`
	OrdersPerNode    map[string]int `json:"ordersPerNode"`
	// UnacknowledgedOrders is orders of intended orders the guest was never
	// told about (it gave up): allowed, not a duplicate.
	UnacknowledgedOrders int `json:"unacknowledgedOrders"`
	// Duplicates is the ids of orders that should not exist: a second order
	// for one requestId or for one intended order.
	Duplicates []int64 `json:"duplicates"`
	// Lost is acknowledged orders missing on some node.
	Lost []LostOrder `json:"lost"`
	// Problems is anything else that does not add up: a node that could not
	// be read, a history too long to verify, an order with the wrong cart
	// or an unknown requestId, an order on some nodes only, a malformed
	// success answer.
	Problems []string `json:"problems"`
	Notes    []string `json:"notes"`

	// AcknowledgedOrders is every distinct order id guests were told
	// about, by order id (JSON only; for cross-checks such as the kitchen
	// stream).
	AcknowledgedOrders []AckedOrder `json:"acknowledgedOrders"`

	// InitialStock is the quantity setup gave each tracked sku of the
	// run's menu, and SessionIDs the run's table sessions (JSON only; for
	// cross-checks such as stock = initial − ordered).
	InitialStock map[string]int `json:"initialStock"`
	SessionIDs   []string       `json:"sessionIds"`
}

// OK reports whether the store passed: no duplicates, nothing lost, and
// verification complete with nothing else wrong. The CLI exits 1 otherwise.
func (r *Report) OK() bool {
	return len(r.Duplicates) == 0 && len(r.Lost) == 0 && len(r.Problems) == 0
}

func (r *runner) report(elapsed time.Duration, interrupted bool, v *verifyResult) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &Report{
		RunID:                r.runID,
		URLs:                 slices.Clone(r.urls),
		Tables:               r.cfg.Tables,
		GuestsPerTable:       r.cfg.GuestsPerTable,
		OrdersPerGuest:       r.cfg.OrdersPerGuest,
		Seed:                 r.cfg.Seed,
		StartedAt:            r.startedAt.UTC().Truncate(time.Second),
		Interrupted:          interrupted,
		Intended:             int(r.intendedN.Load()),
		Acknowledged:         int(r.ackedN.Load()),
		Failed:               int(r.failedN.Load()),
		FailedReasons:        cloneMap(r.failReasons),
		Replays:              int(r.replays.Load()),
		Reconciled:           int(r.reconciled.Load()),
		Requests:             int(r.requests.Load()),
		NetworkErrors:        int(r.netErrors.Load()),
		Rejections:           cloneMap(r.rejections),
		OrderPhaseSeconds:    round(elapsed.Seconds(), 3),
		LatencyMs:            latencyOf(r.latencies),
		RequestLatencyMs:     latencyOf(r.reqLatency),
		VerifiedSessions:     v.sessions,
		OrdersPerNode:        v.ordersPerNode,
		UnacknowledgedOrders: v.unacked,
		Duplicates:           append([]int64{}, v.duplicates...),
		Lost:                 append([]LostOrder{}, v.lost...),
		Problems:             append(slices.Clone(r.problems), v.problems...),
		Notes:                slices.Clone(r.notes),
		Faults: Faults{
			DoubleTaps:    int(r.doubleTaps.Load()),
			KeyChanges:    int(r.keyChanges.Load()),
			LostResponses: int(r.lostInjected.Load()),
			AbandonedTaps: int(r.abandonTaps.Load()),
		},
	}
	rep.InitialStock = cloneMap(r.stock)
	rep.SessionIDs = make([]string, 0, len(r.tables))
	for _, t := range r.tables {
		rep.SessionIDs = append(rep.SessionIDs, t.sessionID)
	}
	rep.AcknowledgedOrders = []AckedOrder{}
	seen := map[int64]bool{}
	for _, o := range r.intended {
		for id, rid := range o.ackedIDs() {
			if !seen[id] {
				seen[id] = true
				rep.AcknowledgedOrders = append(rep.AcknowledgedOrders, AckedOrder{OrderID: id, RequestID: rid, SessionID: o.table.sessionID, TableID: o.table.tableID})
			}
		}
	}
	slices.SortFunc(rep.AcknowledgedOrders, func(a, b AckedOrder) int { return cmp.Compare(a.OrderID, b.OrderID) })
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	if elapsed > 0 {
		rep.OrdersPerSecond = round(float64(rep.Acknowledged)/elapsed.Seconds(), 2)
	}
	for _, t := range r.tables {
		t.mu.Lock()
		capped := t.capped
		t.mu.Unlock()
		if capped {
			rep.Notes = append(rep.Notes, fmt.Sprintf("tables reached the cap of %d intended orders per session (the history shows at most %d); use more --tables for longer runs",
				MaxIntendedPerSession, historyLimit))
			break
		}
	}
	if d := time.Duration(r.cooldownHint.Load()); d > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("guests pause %s after an acknowledged order (the cooldown Retry-After the server announced), so latency measures ordering, not the bench's own back-to-back taps", d))
	}
	// Throughput is bounded by admission, not by the bench.
	t, g := float64(r.cfg.Tables), float64(r.cfg.GuestsPerTable)
	ceiling := math.Min(t/1.0, t*g/3.0)
	rep.Notes = append(rep.Notes, fmt.Sprintf(
		"throughput is bounded by admission: one order per second per table session (session burst, default 1 s) and one per guest per cooldown (default 3 s); with %d tables × %d guests that is about %.1f orders/s at most, so use more --tables to push harder",
		r.cfg.Tables, r.cfg.GuestsPerTable, ceiling))
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	return rep
}

// WriteText writes the human report; its last line is
// "duplicates=N lost=M" (with the offending ids).
func (r *Report) WriteText(w io.Writer) {
	pct := func(n, of int) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
	}
	fmt.Fprintf(w, "MasterOrder bench run %s (seed %d) against %s\n", r.RunID, r.Seed, strings.Join(r.URLs, ", "))
	perGuest := fmt.Sprint(r.OrdersPerGuest)
	if r.OrdersPerGuest == 0 {
		perGuest = "∞"
	}
	fmt.Fprintf(w, "  load          %d tables × %d guests × %s orders\n", r.Tables, r.GuestsPerTable, perGuest)
	if r.Interrupted {
		fmt.Fprintln(w, "  INTERRUPTED   the order phase was stopped early")
	}
	fmt.Fprintf(w, "  intended      %d orders, acknowledged %d (%s), failed %d%s\n",
		r.Intended, r.Acknowledged, pct(r.Acknowledged, r.Intended), r.Failed, formatCounts(r.FailedReasons, " "))
	fmt.Fprintf(w, "  throughput    %.2f orders/s (%d new orders in %.1f s)\n", r.OrdersPerSecond, r.Acknowledged, r.OrderPhaseSeconds)
	fmt.Fprintf(w, "  latency       p50 %.0f  p95 %.0f  p99 %.0f  max %.0f ms (first tap → acknowledged, waits included)\n",
		r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99, r.LatencyMs.Max)
	fmt.Fprintf(w, "  one request   p50 %.0f  p95 %.0f  p99 %.0f  max %.0f ms (order POST answered 200)\n",
		r.RequestLatencyMs.P50, r.RequestLatencyMs.P95, r.RequestLatencyMs.P99, r.RequestLatencyMs.Max)
	fmt.Fprintf(w, "  requests      %d order POSTs, %d replays, %d reconciled through the history, %d network errors\n",
		r.Requests, r.Replays, r.Reconciled, r.NetworkErrors)
	fmt.Fprintf(w, "  faults        %d double taps, %d key changes, %d lost responses (%d extra taps unanswered)\n",
		r.Faults.DoubleTaps, r.Faults.KeyChanges, r.Faults.LostResponses, r.Faults.AbandonedTaps)
	rej := formatCounts(r.Rejections, "")
	if rej == "" {
		rej = "none"
	}
	fmt.Fprintf(w, "  rejections    %s\n", strings.TrimSpace(rej))
	nodes := make([]string, 0, len(r.OrdersPerNode))
	for _, u := range r.URLs {
		if n, ok := r.OrdersPerNode[u]; ok {
			nodes = append(nodes, fmt.Sprintf("%s %d", u, n))
		}
	}
	fmt.Fprintf(w, "  verified      %d sessions on %d nodes (orders: %s), %d orders the guest never heard of\n",
		r.VerifiedSessions, len(r.URLs), strings.Join(nodes, ", "), r.UnacknowledgedOrders)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  PROBLEM: %s\n", p)
	}
	for _, l := range r.Lost {
		fmt.Fprintf(w, "  LOST: order %d (requestId %s, table %s) missing on %s\n", l.OrderID, l.RequestID, l.TableID, strings.Join(l.MissingOn, ", "))
	}
	line := fmt.Sprintf("duplicates=%d lost=%d", len(r.Duplicates), len(r.Lost))
	if len(r.Duplicates) > 0 {
		line += " duplicate-order-ids=" + joinIDs(r.Duplicates)
	}
	if len(r.Lost) > 0 {
		ids := make([]int64, len(r.Lost))
		for i, l := range r.Lost {
			ids[i] = l.OrderID
		}
		line += " lost-order-ids=" + joinIDs(ids)
	}
	if len(r.Problems) > 0 {
		line += fmt.Sprintf(" problems=%d", len(r.Problems))
	}
	fmt.Fprintln(w, line)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJSONFile writes the report as JSON to path.
func (r *Report) WriteJSONFile(path string) error { return writeJSONFile(path, r) }

// writeJSONFile writes v as indented JSON to path (both reports' --json).
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// report is what both bench modes print and judge.
type report interface {
	WriteText(io.Writer)
	WriteJSONFile(path string) error
	OK() bool
}

// finish prints a run's report (and its --json file) and gives the exit
// code: 1 for a runtime failure or a report that did not pass, 2 for bad
// settings.
func finish(rep report, err error, jsonPath string, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "masterorder bench: %v\n", err)
		if isConfigError(err) {
			return 2
		}
		return 1
	}
	rep.WriteText(stdout)
	if jsonPath != "" {
		if err := rep.WriteJSONFile(jsonPath); err != nil {
			fmt.Fprintf(stderr, "masterorder bench: --json: %v\n", err)
			return 1
		}
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

// Main is the whole `masterorder bench` command: args are those after
// "bench". It returns the exit code: 0 the store passed, 1 a runtime failure
// or duplicates/lost/problems found, 2 bad usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, jsonPath, err := ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if isConfigError(err) {
			fmt.Fprintf(stderr, "masterorder bench: %v\n", err)
		}
		return 2
	}
	if cfg.ClosedLoop {
		rep, err := RunClosedLoop(ctx, cfg)
		return finish(rep, err, jsonPath, stdout, stderr)
	}
	rep, err := Run(ctx, cfg)
	return finish(rep, err, jsonPath, stdout, stderr)
}

func latencyOf(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(p float64) float64 {
		// nearest rank
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		i = min(max(i, 0), len(s)-1)
		return round(s[i], 1)
	}
	return Latency{P50: at(50), P95: at(95), P99: at(99), Max: round(s[len(s)-1], 1)}
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func cloneMap(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// formatCounts is " A 3, B 1" (largest first), "" when empty; with a
// non-empty wrap it is put in parentheses.
func formatCounts(m map[string]int, wrap string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if wrap != "" {
		return wrap + "(" + strings.Join(parts, ", ") + ")"
	}
	return " " + strings.Join(parts, ", ")
}

func joinIDs(ids []int64) string {
	const show = 50
	parts := make([]string, 0, min(len(ids), show))
	for i, id := range ids {
		if i == show {
			parts = append(parts, fmt.Sprintf("…(+%d)", len(ids)-show))
			break
		}
		parts = append(parts, fmt.Sprint(id))
	}
	return strings.Join(parts, ",")
}
