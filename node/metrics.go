package node

import (
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"masterorder/raftfsm"
)

// Metrics: every node has its own Prometheus registry (several nodes run
// in one process in tests and in the demo, so nothing goes to the global
// default registry). GET /metrics serves it in the text format.

// latencyBuckets suit a store LAN: a Raft round trip is a few ms, an SD
// card fsync can take tens, a leader change a second or more.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type nodeMetrics struct {
	reg *prometheus.Registry

	commit         prometheus.Histogram
	fsmApply       prometheus.Histogram
	fsmEntries     prometheus.Counter
	snapPersist    prometheus.Histogram
	snapSize       prometheus.Gauge
	snapRestore    prometheus.Histogram
	proposeRetries prometheus.Counter
	forwarded      prometheus.Counter
	peerDials      prometheus.Counter
	logWrites      prometheus.Counter
	logWriteTime   prometheus.Histogram
}

func newNodeMetrics(n *Node) *nodeMetrics {
	reg := prometheus.NewRegistry()
	m := &nodeMetrics{reg: reg}
	f := promFactory{reg}
	m.commit = f.histogram("masterorder_raft_commit_seconds",
		"Time from proposing a command on the leader until it is committed and applied there.")
	m.fsmApply = f.histogram("masterorder_fsm_apply_seconds",
		"Time to apply one batch of committed entries to bbolt and SQLite.")
	m.fsmEntries = f.counter("masterorder_fsm_applied_entries_total", "Raft entries applied to the FSM.")
	m.snapPersist = f.histogram("masterorder_snapshot_persist_seconds", "Time to write one Raft snapshot.")
	m.snapSize = f.gauge("masterorder_snapshot_size_bytes", "Size of the last snapshot this node wrote.")
	m.snapRestore = f.histogram("masterorder_snapshot_restore_seconds", "Time to restore the FSM from a snapshot.")
	m.proposeRetries = f.counter("masterorder_propose_retries_total",
		"Proposals tried again (no leader, leader changed, forward failed).")
	m.forwarded = f.counter("masterorder_forwarded_proposals_total", "Proposals forwarded to the leader.")
	m.peerDials = f.counter("masterorder_peer_dials_total", "Connections dialled to other boxes' internal channel (one per peer while in use).")
	m.logWrites = f.counter("masterorder_raft_log_writes_total",
		"Writes of this node's Raft log, each a bbolt commit with fsync: what wears the box's SD card.")
	m.logWriteTime = f.histogram("masterorder_raft_log_write_seconds",
		"Time of one write of this node's Raft log (a bbolt commit, two fsyncs): on the leader before it sends the entries, on a follower before it answers. A slow card shows here first.")
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newRaftCollector(n),
		newDiskCollector(n),
	)
	return m
}

type promFactory struct{ reg *prometheus.Registry }

func (f promFactory) histogram(name, help string) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets})
	f.reg.MustRegister(h)
	return h
}

func (f promFactory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

// initMetrics creates the node's registry and serves it on GET /metrics.
func (n *Node) initMetrics() {
	n.metrics = newNodeMetrics(n)
	h := promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{Registry: n.metrics.reg})
	n.echo.GET("/metrics", echo.WrapHandler(h), n.staffOnly)
	n.initPprof()
}

// Metrics is the node's Prometheus registry; the domain registers its
// collectors on it.
func (n *Node) Metrics() *prometheus.Registry { return n.metrics.reg }

// observeCommit records one local Raft apply round trip.
func (m *nodeMetrics) observeCommit(start time.Time) {
	m.commit.Observe(time.Since(start).Seconds())
}

// raftCollector reads the Raft figures at scrape time.
type raftCollector struct {
	n                                                      *Node
	state, term, commit, applied, last, ready, voters, all *prometheus.Desc
	commits                                                *prometheus.Desc
}

func newRaftCollector(n *Node) *raftCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &raftCollector{n: n,
		state:   d("masterorder_raft_state", "1 for this node's current Raft state.", "state"),
		term:    d("masterorder_raft_term", "Current Raft term."),
		commit:  d("masterorder_raft_commit_index", "Highest log index known to be committed."),
		applied: d("masterorder_raft_applied_index", "Last log index applied to this node's FSM files."),
		last:    d("masterorder_raft_last_log_index", "Last index in this node's Raft log."),
		ready:   d("masterorder_node_ready", "1 when /readyz answers 200."),
		voters:  d("masterorder_cluster_voters", "Voters in the Raft configuration."),
		all:     d("masterorder_cluster_members", "Members (voters and non-voters) in the Raft configuration."),
		commits: d("masterorder_fsm_commits_total", "Commits of the FSM files (one per group of Raft batches)."),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.term, c.commit, c.applied, c.last, c.ready, c.voters, c.all, c.commits} {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.raft
	if r == nil {
		return
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	cur := r.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == cur {
			v = 1
		}
		g(c.state, v, strings.ToLower(s.String()))
	}
	g(c.term, float64(r.CurrentTerm()))
	g(c.commit, float64(r.CommitIndex()))
	g(c.applied, float64(c.n.fsm.Applied()))
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(c.n.fsm.Commits()))
	g(c.last, float64(r.LastIndex()))
	ready := 0.0
	if c.n.Ready() {
		ready = 1
	}
	g(c.ready, ready)
	if f := r.GetConfiguration(); f.Error() == nil {
		voters := 0
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
		}
		g(c.voters, float64(voters))
		g(c.all, float64(len(f.Configuration().Servers)))
	}
}

// diskCollector exports the card at scrape time.
type diskCollector struct {
	n                  *Node
	free, total, state *prometheus.Desc
	fsm, paused        *prometheus.Desc
}

func newDiskCollector(n *Node) *diskCollector {
	return &diskCollector{n: n,
		free:   prometheus.NewDesc("masterorder_disk_free_bytes", "Free bytes on the data directory's file system (for this user).", nil, nil),
		total:  prometheus.NewDesc("masterorder_disk_total_bytes", "Size of the data directory's file system.", nil, nil),
		state:  prometheus.NewDesc("masterorder_disk_state", "1 for the storage state this box is in (ok, low, full, readonly, slow).", []string{"state"}, nil),
		fsm:    prometheus.NewDesc("masterorder_fsm_files_bytes", "Bytes of the FSM files (a snapshot capture copies as much).", nil, nil),
		paused: prometheus.NewDesc("masterorder_fsm_paused", "1 while the state machine waits out a storage failure.", nil, nil),
	}
}

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.free
	ch <- c.total
	ch <- c.state
	ch <- c.fsm
	ch <- c.paused
}

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	d := &c.n.disk
	d.mu.Lock()
	cur, fsmBytes, paused := d.cur, d.fsmBytes, d.pause != nil
	d.mu.Unlock()
	g := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	g(c.free, float64(cur.FreeBytes))
	g(c.total, float64(cur.TotalBytes))
	for _, s := range []string{DiskOK, DiskLow, DiskFull, DiskReadOnly, DiskSlow} {
		v := 0.0
		if s == cur.State {
			v = 1
		}
		g(c.state, v, s)
	}
	g(c.fsm, float64(fsmBytes))
	p := 0.0
	if paused {
		p = 1
	}
	g(c.paused, p)
}

// countedLogStore counts and times the writes of the Raft log (one bbolt
// commit and fsync per StoreLog or StoreLogs).
type countedLogStore struct {
	raft.LogStore
	writes prometheus.Counter
	took   prometheus.Observer
	noted  func(took time.Duration, err error) // the card's watch (disk_watch.go)
}

func (s countedLogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

func (s countedLogStore) StoreLogs(logs []*raft.Log) error {
	s.writes.Inc()
	start := time.Now()
	err := s.LogStore.StoreLogs(logs)
	took := time.Since(start)
	if s.took != nil {
		s.took.Observe(took.Seconds())
	}
	if s.noted != nil {
		s.noted(took, err)
	}
	return err
}

// meteredFSM is what Raft drives: the node's FSM with timings around
// batches, snapshots and restores.
type meteredFSM struct {
	f *raftfsm.FSM
	m *nodeMetrics
}

var _ raft.BatchingFSM = meteredFSM{}

func (w meteredFSM) Apply(l *raft.Log) interface{} { return w.ApplyBatch([]*raft.Log{l})[0] }

func (w meteredFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	start := time.Now()
	out := w.f.ApplyBatch(logs)
	w.m.fsmApply.Observe(time.Since(start).Seconds())
	w.m.fsmEntries.Add(float64(len(logs)))
	return out
}

func (w meteredFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := w.f.Snapshot()
	if err != nil {
		return nil, err
	}
	return meteredSnapshot{s: s, m: w.m}, nil
}

func (w meteredFSM) Restore(rc io.ReadCloser) error {
	start := time.Now()
	err := w.f.Restore(rc)
	if err == nil {
		w.m.snapRestore.Observe(time.Since(start).Seconds())
	}
	return err
}

type meteredSnapshot struct {
	s raft.FSMSnapshot
	m *nodeMetrics
}

func (s meteredSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	cs := &countingSink{SnapshotSink: sink}
	err := s.s.Persist(cs)
	if err == nil {
		s.m.snapPersist.Observe(time.Since(start).Seconds())
		s.m.snapSize.Set(float64(cs.n.Load()))
	}
	return err
}

func (s meteredSnapshot) Release() { s.s.Release() }

type countingSink struct {
	raft.SnapshotSink
	n atomic.Int64
}

func (c *countingSink) Write(p []byte) (int, error) {
	k, err := c.SnapshotSink.Write(p)
	c.n.Add(int64(k))
	return k, err
}
