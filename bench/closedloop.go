package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The closed loop (`masterorder bench --closed-loop`) measures throughput
// rather than behaviour under faults: Concurrency callers, each sending its
// next order the moment the last one was answered, every order from a
// fresh phone (client id) with a fresh key, at the next of many sessions so
// that neither the client cooldown nor the session burst window binds.
// Orders answered during the warm-up are not counted.

// closedLoopDefaults fill what a closed-loop Config leaves at zero.
const (
	defaultClosedLoopSessions = 6000
	defaultWarmup             = 5 * time.Second
	// setupParallelism bounds the staff calls in flight while opening the
	// sessions: enough to be quick, few enough not to trip the cluster
	// (thousands of concurrent staff writes would queue behind one
	// another past the request timeout).
	setupParallelism = 16
)

// ClosedLoopReport is the outcome of one closed-loop run.
type ClosedLoopReport struct {
	RunID       string   `json:"runId"`
	URLs        []string `json:"urls"`
	LocalNodes  bool     `json:"localNodes"` // the bench started the nodes itself
	Concurrency int      `json:"concurrency"`
	Sessions    int      `json:"sessions"`
	// WarmupSeconds were excluded; MeasuredSeconds is the window counted.
	WarmupSeconds   float64 `json:"warmupSeconds"`
	MeasuredSeconds float64 `json:"measuredSeconds"`
	SetupSeconds    float64 `json:"setupSeconds"`
	// Addressing is where the orders were sent: "leader" (--leader-only:
	// every order to the Raft leader, as guests' phones reach the store by
	// its name) or "spread" (round robin over the nodes: a follower
	// forwards its share to the leader). Figures of the two are not
	// comparable. Leaders is, with "leader", every node orders were sent
	// to as the leader, in turn (more than one: the leader changed).
	Addressing string   `json:"addressing"`
	Leaders    []string `json:"leaders,omitempty"`

	// Orders is new orders answered 200 inside the window; OrdersPerSecond
	// is Orders / MeasuredSeconds; LatencyMs is request → 200 of those.
	// OrdersTotal is every new order of the run, the warm-up's included;
	// StopAfterOrders is --orders (the run ended once OrdersTotal reached
	// it; 0 = the run was timed only).
	Orders          int     `json:"orders"`
	OrdersTotal     int     `json:"ordersTotal"`
	StopAfterOrders int     `json:"stopAfterOrders,omitempty"`
	OrdersPerSecond float64 `json:"ordersPerSecond"`
	LatencyMs       Latency `json:"latencyMs"`
	// Replays is 200 answers marked idempotentReplay inside the window (a
	// fresh key and a cart new to its session should never be one).
	Replays int `json:"replays"`
	// Rejections is every non-200 answer inside the window by reason code
	// (HTTP_<status> without one, NETWORK_ERROR without an answer).
	Rejections map[string]int `json:"rejections"`
	// DuplicateOrderIDs is order ids answered to two different keys
	// (must be empty).
	DuplicateOrderIDs []int64 `json:"duplicateOrderIds"`

	// Nodes is each node's resources; per order figures divide by Orders.
	// Cluster is the per order figures summed over the nodes: what one
	// order costs the whole cluster.
	Nodes   []NodeUsage  `json:"nodes"`
	Cluster ClusterUsage `json:"cluster"`
	// Callers is what the bench process itself (the phones: their HTTP,
	// JSON and the checks above) spent per order over the window. It shares
	// the machine with local nodes, so a heavier harness lowers the nodes'
	// figure; bench/etcd reports its callers the same way.
	Callers CallersUsage `json:"callers"`
	// Profiles is the CPU profiles written (--cpuprofile DIR).
	Profiles []string `json:"profiles,omitempty"`
	Notes    []string `json:"notes"`
}

// NodeUsage is one node's resources over the run.
type NodeUsage struct {
	URL string `json:"url"`
	PID int    `json:"pid,omitempty"`
	// Source is where the figures come from: "proc" (/proc/PID, local
	// nodes) or "metrics" (/metrics: no peak, so the largest RSS sampled
	// every second, and no disk bytes).
	Source string `json:"source"`
	// PeakRSSBytes is VmHWM for local nodes (the process's peak since it
	// started), else the largest process_resident_memory_bytes sampled.
	// RSSBytes is the resident set at the end of the run, after the last
	// order was answered (VmRSS, or the last sample of /metrics); with
	// --orders it is the memory after that many orders.
	// HeapInuseBytes is the Go heap in use at the end
	// (go_memstats_heap_inuse_bytes of /metrics; -1 unknown).
	PeakRSSBytes   int64 `json:"peakRssBytes"`
	RSSBytes       int64 `json:"rssBytes"`
	HeapInuseBytes int64 `json:"heapInuseBytes"`
	// WrittenBytes is /proc/PID/io write_bytes (bytes sent to the storage
	// layer) during the measured window; -1 when unknown.
	WrittenBytes         int64   `json:"writtenBytes"`
	WrittenBytesPerOrder float64 `json:"writtenBytesPerOrder"`
	// CPUSeconds is user + system time during the window (/proc/PID/stat;
	// -1 unknown), CPUMicrosPerOrder the same in microseconds per order: on
	// a shared machine the steadiest figure of what an order costs, as it
	// does not depend on how much CPU the machine had to give that hour.
	CPUSeconds        float64 `json:"cpuSeconds"`
	CPUMicrosPerOrder float64 `json:"cpuMicrosPerOrder"`
	// GuestOrders is the guest orders this node admitted during the run,
	// warm-up included (its own masterorder_orders_admitted_total, source
	// guest: counted where the order arrived, forwarded or not), and
	// Forwarded the proposals it forwarded to the leader meanwhile
	// (masterorder_forwarded_proposals_total): which node the orders
	// reached, by the nodes' own count. -1 when unknown.
	GuestOrders int64 `json:"guestOrders"`
	Forwarded   int64 `json:"forwarded"`
	// Where an order's time goes in Raft, from the node's /metrics over
	// the window: its log writes per second, entries per write (entries
	// applied ÷ writes), and the mean time of one write (a bbolt commit,
	// two fsyncs: the leader's before it sends the entries, a follower's
	// before it answers); CommitMillis the mean time from proposing to
	// applied on the node while it led (0: it proposed nothing). -1 when
	// unknown (a build without masterorder_raft_log_write_seconds).
	LogWritesPerSecond float64 `json:"logWritesPerSecond"`
	EntriesPerLogWrite float64 `json:"entriesPerLogWrite"`
	LogWriteMillis     float64 `json:"logWriteMillis"`
	CommitMillis       float64 `json:"commitMillis"`
}

// ClusterUsage is the per order figures of every node added up: CPU
// microseconds and bytes written that one order costs the cluster (-1 when
// some node's figure is unknown, e.g. against --url nodes).
type ClusterUsage struct {
	CPUMicrosPerOrder    float64 `json:"cpuMicrosPerOrder"`
	WrittenBytesPerOrder float64 `json:"writtenBytesPerOrder"`
}

// clusterUsage sums the nodes' per order figures.
func clusterUsage(nodes []NodeUsage) ClusterUsage {
	c := ClusterUsage{}
	for _, n := range nodes {
		if n.CPUSeconds < 0 || c.CPUMicrosPerOrder < 0 {
			c.CPUMicrosPerOrder = -1
		} else {
			c.CPUMicrosPerOrder += n.CPUMicrosPerOrder
		}
		if n.WrittenBytes < 0 || c.WrittenBytesPerOrder < 0 {
			c.WrittenBytesPerOrder = -1
		} else {
			c.WrittenBytesPerOrder += n.WrittenBytesPerOrder
		}
	}
	if len(nodes) == 0 {
		return ClusterUsage{CPUMicrosPerOrder: -1, WrittenBytesPerOrder: -1}
	}
	c.CPUMicrosPerOrder = round(c.CPUMicrosPerOrder, 1)
	c.WrittenBytesPerOrder = round(c.WrittenBytesPerOrder, 0)
	return c
}

// CallersUsage is the bench process's own CPU per order during the
// window (/proc/self/stat; -1 unknown).
type CallersUsage struct {
	CPUMicrosPerOrder float64 `json:"cpuMicrosPerOrder"`
}

// callersUsage divides this process's CPU over the window by its orders.
func callersUsage(before, after time.Duration, okBefore, okAfter bool, orders int) CallersUsage {
	if !okBefore || !okAfter || orders <= 0 {
		return CallersUsage{CPUMicrosPerOrder: -1}
	}
	return CallersUsage{CPUMicrosPerOrder: round(float64(after-before)/float64(time.Microsecond)/float64(orders), 1)}
}

// OK reports whether the run saw nothing wrong: no order id answered to
// two keys, no replay of a fresh key.
func (r *ClosedLoopReport) OK() bool { return len(r.DuplicateOrderIDs) == 0 && r.Replays == 0 }

// closedLoop is the state of one closed-loop run.
type closedLoop struct {
	*runner
	cluster *localCluster // nil against --url nodes
	usage   []*usageProbe
	leader  *leaderTracker // --leader-only; nil: spread

	measuring atomic.Bool // inside the window
	orders    atomic.Int64
	total     atomic.Int64  // new orders of the whole run (warm-up included)
	reached   chan struct{} // closed once total reaches cfg.Orders (> 0)
	reachOnce sync.Once
	replays   atomic.Int64
	next      atomic.Int64 // round robin over sessions

	clMu       sync.Mutex
	lat        []float64
	rejections map[string]int
	keyOf      map[int64]string // order id → key it answered
	dups       []int64
}

// RunClosedLoop runs the closed loop: it starts three local nodes when
// cfg.URLs is empty, sets up the menu and cfg.Sessions sessions, runs
// cfg.Concurrency callers for cfg.Warmup + cfg.Duration and reports the
// window after the warm-up.
func RunClosedLoop(ctx context.Context, cfg Config) (*ClosedLoopReport, error) {
	cfg.URLs = append([]string(nil), cfg.URLs...)
	var lc *localCluster
	if len(cfg.URLs) == 0 {
		var err error
		lc, err = startLocalCluster(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("bench: starting local nodes: %w", err)
		}
		defer lc.stop()
		cfg.URLs = lc.urls()
		cfg.StaffPassword = lc.password
		cfg.DataDir = "" // used: the nodes are up
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()&(1<<62-1) | 1
	}
	// One table per session; the burst window is per session.
	cfg.Tables = cfg.Sessions
	cl := &closedLoop{runner: newRunner(cfg), cluster: lc, rejections: map[string]int{}, keyOf: map[int64]string{}, reached: make(chan struct{})}
	defer cl.client.CloseIdleConnections()

	t0 := time.Now()
	if err := cl.setupClosedLoop(ctx); err != nil {
		return nil, fmt.Errorf("bench setup: %w", err)
	}
	setup := time.Since(t0)

	addressing := "spread"
	if cfg.LeaderOnly {
		addressing = "leader"
		cl.leader = newLeaderTracker(cl.runner, cfg.leaderRecheck)
		if _, err := cl.leader.resolve(ctx, 0, cl.replicationWait); err != nil {
			return nil, fmt.Errorf("bench setup: --leader-only: %w", err)
		}
	}

	cl.usage = cl.newUsageProbes()
	rep := &ClosedLoopReport{RunID: cl.runID, URLs: cfg.URLs, LocalNodes: lc != nil, Concurrency: cfg.Concurrency,
		Sessions: cfg.Sessions, WarmupSeconds: cfg.Warmup.Seconds(), SetupSeconds: round(setup.Seconds(), 2), StopAfterOrders: cfg.Orders,
		Addressing: addressing}
	cl.readCounters(ctx, (*usageProbe).countersBegin)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := cl.startClosedProgress()
	stopWatching := func() {}
	if cl.leader != nil {
		stopWatching = cl.leader.watch(runCtx)
	}
	var wg sync.WaitGroup
	for i := range cfg.Concurrency {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
		wg.Go(func() { cl.caller(runCtx, i, rng) })
	}
	stopSampling := cl.sampleUsage(runCtx)

	var winStart, winEnd time.Time
	var selfBefore, selfAfter time.Duration
	var selfOKBefore, selfOKAfter bool
	if cl.wait(ctx, cfg.Warmup, false) {
		for _, u := range cl.usage {
			u.begin()
		}
		selfBefore, selfOKBefore = selfCPU()
		cl.readCounters(ctx, (*usageProbe).raftBegin)
		winStart = time.Now()
		cl.measuring.Store(true)
		if cfg.CPUProfileDir != "" {
			rep.Profiles = cl.profile(ctx, cfg.Duration)
		} else {
			cl.wait(ctx, cfg.Duration, cfg.Orders > 0)
		}
		cl.measuring.Store(false)
		winEnd = time.Now()
		selfAfter, selfOKAfter = selfCPU()
		for _, u := range cl.usage {
			u.end()
		}
		cl.readCounters(ctx, (*usageProbe).raftEnd)
	}
	cancel()
	wg.Wait()
	stopWatching()
	stopSampling()
	stopProgress()
	cl.readCounters(ctx, (*usageProbe).countersEnd)
	if cl.leader != nil {
		rep.Leaders = cl.leader.leaders()
	}

	if !winStart.IsZero() {
		rep.MeasuredSeconds = round(winEnd.Sub(winStart).Seconds(), 2)
	}
	rep.Orders = int(cl.orders.Load())
	rep.OrdersTotal = int(cl.total.Load())
	if cfg.Orders > 0 && winStart.IsZero() && ctx.Err() == nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--orders %d were reached during the warm-up: nothing was measured", cfg.Orders))
	}
	if rep.MeasuredSeconds > 0 {
		rep.OrdersPerSecond = round(float64(rep.Orders)/rep.MeasuredSeconds, 1)
	}
	rep.Replays = int(cl.replays.Load())
	cl.clMu.Lock()
	rep.LatencyMs = latencyOf(cl.lat)
	rep.Rejections = cloneMap(cl.rejections)
	rep.DuplicateOrderIDs = append([]int64{}, cl.dups...)
	cl.clMu.Unlock()
	for _, u := range cl.usage {
		rep.Nodes = append(rep.Nodes, u.result(rep.Orders))
	}
	rep.Cluster = clusterUsage(rep.Nodes)
	rep.Callers = callersUsage(selfBefore, selfAfter, selfOKBefore, selfOKAfter, rep.Orders)
	rep.Notes = append(rep.Notes, cl.notes...)
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	if ctx.Err() != nil {
		rep.Notes = append(rep.Notes, "interrupted")
	}
	return rep, nil
}

// setupClosedLoop logs in, puts the menu and stock in place and opens the
// sessions, setupParallelism at a time.
func (cl *closedLoop) setupClosedLoop(ctx context.Context) error {
	var login struct {
		Token string `json:"token"`
	}
	if err := cl.staffCall(ctx, http.MethodPost, "/api/staff/login", map[string]string{"password": cl.cfg.StaffPassword}, &login); err != nil {
		return fmt.Errorf("staff login: %w", err)
	}
	cl.token = login.Token
	if err := cl.putMenu(ctx, maxStockQuantity); err != nil {
		return err
	}
	cl.tables = make([]*table, cl.cfg.Sessions)
	jobs := make(chan int)
	errc := make(chan error, setupParallelism)
	var wg sync.WaitGroup
	for range setupParallelism {
		wg.Go(func() {
			for i := range jobs {
				t := &table{idx: i, tableID: fmt.Sprintf("%s-T%d", cl.prefix, i+1), carts: map[string]bool{}}
				var s struct {
					SessionID string `json:"sessionId"`
					PIN       string `json:"pin"`
				}
				if err := cl.staffCall(ctx, http.MethodPost, "/api/staff/sessions", map[string]string{"tableId": t.tableID}, &s); err != nil {
					errc <- fmt.Errorf("opening session for %s: %w", t.tableID, err)
					return
				}
				t.sessionID, t.pin = s.SessionID, s.PIN
				cl.tables[i] = t
			}
		})
	}
	var err error
feed:
	for i := range cl.cfg.Sessions {
		select {
		case jobs <- i:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	if err != nil {
		return err
	}
	cl.waitReplicated(ctx)
	return nil
}

// caller is one closed-loop client: the next order as soon as the last one
// was answered, spread over the nodes, or with --leader-only to the
// leader (after a refusal it asks which node leads now before waiting).
func (cl *closedLoop) caller(ctx context.Context, idx int, rng *rand.Rand) {
	node := idx % len(cl.urls)
	var seen uint64 // the leader search node came from
	for ctx.Err() == nil {
		if cl.leader != nil {
			node, seen = cl.leader.current()
		}
		t := cl.tables[int(cl.next.Add(1)-1)%len(cl.tables)]
		cart, allowRepeat := t.claimCart(func() []line { return randomCart(rng, cl.items) })
		body := orderBody{Items: cart, ExpectedTotal: cartTotal(cart, cl.items), AllowRepeat: allowRepeat}
		hdr := cl.guestHeader(t, "guest-"+randomID(16))
		key := newUUIDv4()
		hdr.Set("Idempotency-Key", key)
		path := "/api/guest/sessions/" + url.PathEscape(t.sessionID) + "/orders"
		res, err := do(ctx, cl.client, cl.timeout, http.MethodPost, cl.urls[node]+path, hdr, body, false)
		counted := cl.measuring.Load()
		node = (node + 1) % len(cl.urls)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if counted {
				cl.rejectCL("NETWORK_ERROR")
			}
			if !cl.followLeader(ctx, seen) {
				sleep(ctx, 50*time.Millisecond)
			}
			continue
		}
		t.keepCredential(res)
		if res.status != http.StatusOK {
			if counted {
				cl.rejectCL(res.reasonOrStatus())
			}
			if res.status >= 500 && !cl.followLeader(ctx, seen) {
				sleep(ctx, waitFor(res, 50*time.Millisecond))
			}
			continue
		}
		var a orderAnswer
		if json.Unmarshal(res.body, &a) != nil || a.OrderID <= 0 {
			if counted {
				cl.rejectCL("BAD_SUCCESS_BODY")
			}
			continue
		}
		cl.clMu.Lock()
		if prev, seen := cl.keyOf[a.OrderID]; seen && prev != key {
			cl.dups = append(cl.dups, a.OrderID)
		}
		cl.keyOf[a.OrderID] = key
		if counted && !a.IdempotentReplay {
			cl.lat = append(cl.lat, float64(res.elapsed)/float64(time.Millisecond))
		}
		cl.clMu.Unlock()
		if !a.IdempotentReplay {
			cl.countTotal()
		}
		if counted {
			if a.IdempotentReplay {
				cl.replays.Add(1)
			} else {
				cl.orders.Add(1)
			}
		}
	}
}

// followLeader, after a refusal with --leader-only, searches for the
// leader again (once for every caller refused by the same leader) and
// reports whether it is now another node: then the order goes there at
// once, as a phone's next request through the store's name would.
func (cl *closedLoop) followLeader(ctx context.Context, seen uint64) bool {
	return cl.leader != nil && cl.leader.follow(ctx, seen)
}

// readCounters reads every node's order counters at once (the start or the
// end of the run).
func (cl *closedLoop) readCounters(ctx context.Context, read func(*usageProbe, context.Context)) {
	var wg sync.WaitGroup
	for _, u := range cl.usage {
		wg.Go(func() { read(u, ctx) })
	}
	wg.Wait()
}

// countTotal counts a new order of the run and ends the run once
// cfg.Orders is reached.
func (cl *closedLoop) countTotal() {
	if n := cl.total.Add(1); cl.cfg.Orders > 0 && n >= int64(cl.cfg.Orders) {
		cl.reachOnce.Do(func() { close(cl.reached) })
	}
}

// wait sleeps d (d = 0 and openEnded: until cfg.Orders are reached), and
// returns false when ctx ended or cfg.Orders were reached first.
func (cl *closedLoop) wait(ctx context.Context, d time.Duration, openEnded bool) bool {
	var timer <-chan time.Time
	if d > 0 || !openEnded {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-ctx.Done():
		return false
	case <-cl.reached:
		return false
	}
}

func (cl *closedLoop) rejectCL(reason string) {
	cl.clMu.Lock()
	cl.rejections[reason]++
	cl.clMu.Unlock()
}

// startClosedProgress prints orders/s of the last second while running.
func (cl *closedLoop) startClosedProgress() (stop func()) {
	w := cl.cfg.Progress
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case <-t.C:
				phase := "warm-up"
				if cl.measuring.Load() {
					phase = "measuring"
				}
				fmt.Fprintf(w, "\rbench %s  %4.0fs  %s  orders %d   ", cl.runID, time.Since(start).Seconds(), phase, cl.orders.Load())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// profile fetches a CPU profile of the measured window from every node
// into cfg.CPUProfileDir (staff token; loopback needs none) and returns
// the files written.
func (cl *closedLoop) profile(ctx context.Context, d time.Duration) []string {
	// Every response must be written within 30 s (API.md, Timeouts).
	secs := min(max(1, int(d.Round(time.Second)/time.Second)), 25)
	if err := os.MkdirAll(cl.cfg.CPUProfileDir, 0o755); err != nil {
		cl.note("--cpuprofile: " + err.Error())
		sleep(ctx, d)
		return nil
	}
	var mu sync.Mutex
	var files []string
	var wg sync.WaitGroup
	for i, base := range cl.urls {
		wg.Go(func() {
			c := &http.Client{Timeout: d + 30*time.Second}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+cl.token)
			resp, err := c.Do(req)
			if err != nil {
				cl.note(fmt.Sprintf("--cpuprofile %s: %v", base, err))
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				cl.note(fmt.Sprintf("--cpuprofile %s: %s", base, resp.Status))
				return
			}
			name := filepath.Join(cl.cfg.CPUProfileDir, fmt.Sprintf("node%d.pprof", i+1))
			f, err := os.Create(name)
			if err != nil {
				cl.note("--cpuprofile: " + err.Error())
				return
			}
			_, err = io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				cl.note("--cpuprofile: " + err.Error())
				return
			}
			mu.Lock()
			files = append(files, name)
			mu.Unlock()
		})
	}
	// The callers' own CPU (this process) in the same window, so a profile
	// shows what the harness costs the shared machine beside the nodes.
	stopSelf := cl.profileSelf(filepath.Join(cl.cfg.CPUProfileDir, "callers.pprof"))
	// The window is the profile's length even if a node did not answer.
	sleep(ctx, d)
	self := stopSelf()
	wg.Wait() // files is the nodes' goroutines' until then
	if self != "" {
		files = append(files, self)
	}
	slices.Sort(files)
	return files
}

// profileSelf starts a CPU profile of this process into name; the
// function it returns stops it and returns the file's name ("" if there
// is no profile: another one was running, or the file failed).
func (cl *closedLoop) profileSelf(name string) func() string {
	f, err := os.Create(name)
	if err != nil {
		cl.note("--cpuprofile: " + err.Error())
		return func() string { return "" }
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		cl.note("--cpuprofile callers: " + err.Error())
		f.Close()
		os.Remove(name)
		return func() string { return "" }
	}
	return func() string {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			cl.note("--cpuprofile: " + err.Error())
			return ""
		}
		return name
	}
}

// WriteText prints the report for people.
func (r *ClosedLoopReport) WriteText(w io.Writer) {
	where := "nodes " + strings.Join(r.URLs, ", ")
	if r.LocalNodes {
		where = "3 local nodes (init + run, mutual TLS between them): " + strings.Join(r.URLs, ", ")
	}
	fmt.Fprintf(w, "closed loop %s: %s\n", r.RunID, where)
	fmt.Fprintf(w, "  %d callers, %d sessions, setup %.1fs, warm-up %.1fs excluded, measured %.1fs\n",
		r.Concurrency, r.Sessions, r.SetupSeconds, r.WarmupSeconds, r.MeasuredSeconds)
	fmt.Fprintf(w, "  addressing    %s\n", r.addressingText())
	fmt.Fprintf(w, "  orders        %d (%.1f orders/s); %d in all, warm-up included\n", r.Orders, r.OrdersPerSecond, r.OrdersTotal)
	fmt.Fprintf(w, "  latency ms    p50 %.1f  p95 %.1f  p99 %.1f  max %.1f\n", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99, r.LatencyMs.Max)
	fmt.Fprintf(w, "  rejections    %s\n", formatCounts(r.Rejections, ""))
	fmt.Fprintf(w, "  replays       %d (must be 0)\n", r.Replays)
	fmt.Fprintf(w, "  duplicates    %d (must be 0)\n", len(r.DuplicateOrderIDs))
	for _, n := range r.Nodes {
		written := "n/a"
		if n.WrittenBytes >= 0 {
			written = fmt.Sprintf("%.1f MiB, %.0f B/order", float64(n.WrittenBytes)/(1<<20), n.WrittenBytesPerOrder)
		}
		cpu := "n/a"
		if n.CPUSeconds >= 0 {
			cpu = fmt.Sprintf("%.0f µs/order", n.CPUMicrosPerOrder)
		}
		heap := ""
		if n.HeapInuseBytes >= 0 {
			heap = fmt.Sprintf(" (Go heap %.1f MiB)", float64(n.HeapInuseBytes)/(1<<20))
		}
		counts := ""
		if n.GuestOrders >= 0 {
			counts = fmt.Sprintf("  guest orders admitted %d", n.GuestOrders)
		}
		if n.Forwarded >= 0 {
			counts += fmt.Sprintf("  forwarded %d", n.Forwarded)
		}
		fmt.Fprintf(w, "  node %s  cpu %s  written %s  RSS %.1f MiB at the end%s, peak %.1f MiB  (%s)%s\n",
			n.URL, cpu, written, float64(n.RSSBytes)/(1<<20), heap, float64(n.PeakRSSBytes)/(1<<20), n.Source, counts)
		if n.LogWritesPerSecond >= 0 {
			commit := ""
			if n.CommitMillis > 0 {
				commit = fmt.Sprintf("; as leader, proposed to applied %.1f ms", n.CommitMillis)
			}
			fmt.Fprintf(w, "       raft log %.0f writes/s, %.1f entries and %.2f ms each%s\n", n.LogWritesPerSecond, n.EntriesPerLogWrite, n.LogWriteMillis, commit)
		}
	}
	cpu, written := "n/a", "n/a"
	if r.Cluster.CPUMicrosPerOrder >= 0 {
		cpu = fmt.Sprintf("%.0f µs/order", r.Cluster.CPUMicrosPerOrder)
	}
	if r.Cluster.WrittenBytesPerOrder >= 0 {
		written = fmt.Sprintf("%.0f B/order", r.Cluster.WrittenBytesPerOrder)
	}
	fmt.Fprintf(w, "  cluster       cpu %s  written %s  (the %d nodes summed)\n", cpu, written, len(r.Nodes))
	if r.Callers.CPUMicrosPerOrder >= 0 {
		fmt.Fprintf(w, "  callers       cpu %.0f µs/order  (this process: the phones' HTTP and JSON, and the checks)\n", r.Callers.CPUMicrosPerOrder)
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(w, "  cpu profile   %s\n", p)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// addressingText says where the orders went, for the text report.
func (r *ClosedLoopReport) addressingText() string {
	switch r.Addressing {
	case "leader":
		s := "leader: every order to the Raft leader, as phones reach the store by its name (--leader-only)"
		if len(r.Leaders) > 0 {
			s += "; leader " + strings.Join(r.Leaders, ", then ")
		}
		if len(r.Leaders) > 1 {
			s += fmt.Sprintf(" (changed %d× during the run)", len(r.Leaders)-1)
		}
		return s
	case "spread":
		return fmt.Sprintf("spread: round robin over the %d nodes, each follower forwarding its share to the leader (--leader-only sends them all to the leader)", len(r.URLs))
	}
	return r.Addressing
}

// WriteJSONFile writes the report as JSON to path (--json).
func (r *ClosedLoopReport) WriteJSONFile(path string) error { return writeJSONFile(path, r) }
