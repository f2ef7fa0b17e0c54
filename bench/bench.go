package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// runner is the state of one Run.
type runner struct {
	cfg     Config
	client  *http.Client
	timeout time.Duration
	urls    []string
	runID   string // random, 8 hex characters
	prefix  string // "bench-<runID>": menu ids, sku and table ids
	token   string
	items   []menuItem
	tables  []*table
	stock   map[string]int // tracked sku → quantity set at setup

	verifyClientID string // client id of setup and verification reads

	verifySettle, replicationWait time.Duration
	startedAt                     time.Time // of the order phase

	// cooldownHint is the longest Retry-After of a COOLDOWN_ACTIVE seen
	// (ns): guests pause that long after an acknowledged order, as a person
	// would, so that latency measures ordering rather than the bench's own
	// back-to-back taps.
	cooldownHint atomic.Int64

	intendedN, ackedN, failedN          atomic.Int64
	requests, replays, reconciled       atomic.Int64
	netErrors, lostInjected             atomic.Int64
	doubleTaps, keyChanges, abandonTaps atomic.Int64

	mu          sync.Mutex
	rejections  map[string]int
	failReasons map[string]int
	latencies   []float64 // ms, intended order: first send → acknowledged
	reqLatency  []float64 // ms, one order POST answered 200
	intended    []*intendedOrder
	notes       []string
	problems    []string // contract violations seen while ordering
}

func newRunner(cfg Config) *runner {
	runID := randomID(8)
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	r := &runner{
		cfg:            cfg,
		client:         newHTTPClient(timeout),
		timeout:        timeout,
		urls:           cfg.URLs,
		runID:          runID,
		prefix:         "bench-" + runID,
		verifyClientID: "guest-benchverify" + runID,
		rejections:     map[string]int{},
		failReasons:    map[string]int{},
	}
	if cfg.Transport != nil {
		r.client.Transport = cfg.Transport(r.client.Transport)
	}
	r.items = benchMenu(r.prefix)
	r.verifySettle = cmp.Or(cfg.verifySettle, defaultVerifySettle)
	r.replicationWait = cmp.Or(cfg.replicationWait, defaultReplicationWait)
	return r
}

// Run sets up the run's menu and tables through the staff API on cfg.URLs,
// runs the guests, then verifies every session on every node. It returns an
// error only when the configuration is bad (a *ConfigError) or setup fails;
// a run interrupted through ctx still verifies what it did (bounded) and
// reports Interrupted. Whether the store passed is Report.OK.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.URLs = append([]string(nil), cfg.URLs...)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()&(1<<62-1) | 1
	}
	r := newRunner(cfg)
	defer r.client.CloseIdleConnections()

	if err := r.setup(ctx); err != nil {
		return nil, fmt.Errorf("bench setup: %w", err)
	}

	start := time.Now()
	r.startedAt = start
	stopProgress := r.startProgress(start)
	r.runGuests(ctx, start)
	elapsed := time.Since(start)
	stopProgress()
	interrupted := ctx.Err() != nil

	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	v := r.verify(vctx)
	return r.report(elapsed, interrupted, v), nil
}

// guest is one phone: its own client id, a table, a home node.
type guest struct {
	idx      int
	clientID string
	table    *table
	home     int
	rng      *rand.Rand // carts and pauses
	dice     *rand.Rand // faults: a stream of its own, so a seed always picks the same faults
}

func (r *runner) runGuests(ctx context.Context, start time.Time) {
	total := r.cfg.Tables * r.cfg.GuestsPerTable
	conc := r.cfg.Concurrency
	if conc <= 0 || conc > total {
		conc = total
	}
	var deadline time.Time
	if r.cfg.Duration > 0 {
		deadline = start.Add(r.cfg.Duration)
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for gi := range total {
		g := &guest{
			idx:      gi,
			clientID: "guest-" + randomID(16),
			table:    r.tables[gi%r.cfg.Tables],
			home:     gi % len(r.urls),
			rng:      rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(2*gi))),
			dice:     rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(2*gi+1))),
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			r.runGuest(ctx, g, deadline)
		})
	}
	wg.Wait()
}

func (r *runner) runGuest(ctx context.Context, g *guest, deadline time.Time) {
	// Guests do not all tap at the same instant.
	if !sleep(ctx, time.Duration(g.rng.IntN(250))*time.Millisecond) {
		return
	}
	acked := false
	for i := 0; r.cfg.OrdersPerGuest == 0 || i < r.cfg.OrdersPerGuest; i++ {
		if acked {
			// A person does not order again the instant the last order
			// went through; waiting out the cooldown the server announced
			// costs no throughput (it would refuse earlier orders anyway).
			pause := time.Duration(r.cooldownHint.Load())
			if pause > 0 && !sleep(ctx, pause+time.Duration(g.rng.IntN(100))*time.Millisecond) {
				return
			}
		}
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			return
		}
		if !g.table.reserve() {
			return
		}
		acked = r.placeIntended(ctx, g)
	}
}

// startProgress prints the live line every second until the returned stop
// is called, which prints the final line and a newline.
func (r *runner) startProgress(start time.Time) (stop func()) {
	w := r.cfg.Progress
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	show := func() {
		el := time.Since(start).Seconds()
		acked := r.ackedN.Load()
		rate := 0.0
		if el > 0 {
			rate = float64(acked) / el
		}
		fmt.Fprintf(w, "\rbench %s  %4.0fs  intended %d  acked %d  %.1f orders/s  replays %d  errors %d   ",
			r.runID, el, r.intendedN.Load(), acked, rate, r.replays.Load(), r.netErrors.Load()+r.failedN.Load())
	}
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				show()
				fmt.Fprintln(w)
				return
			case <-t.C:
				show()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

func (r *runner) reject(reason string) {
	r.mu.Lock()
	r.rejections[reason]++
	r.mu.Unlock()
}

func (r *runner) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.notes {
		if n == s {
			return
		}
	}
	r.notes = append(r.notes, s)
}

func (r *runner) problem(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) < 100 {
		r.problems = append(r.problems, s)
	}
}

// sleep waits d, or until ctx ends: false when ctx ended first (or had
// already ended). The bench keeps its own rather than the server's
// (orders/backoff): it shares no code with what it measures.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return ctx.Err() == nil
	}
}
