package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// usageProbe follows one node's memory and disk writes: from /proc/PID when
// the bench started the node, else from its /metrics.
type usageProbe struct {
	cl   *closedLoop
	base string
	pid  int // 0: not local

	mu          sync.Mutex
	peakRSS     int64
	rss         int64 // the last sample (VmRSS for local nodes)
	heapInuse   int64 // at the end (-1 unknown)
	wroteBefore int64 // write_bytes at the start of the window (-1 unknown)
	wrote       int64 // during the window (-1 unknown)
	cpuBefore   time.Duration
	cpu         time.Duration // user + system during the window (-1 unknown)

	// The node's own order counters at the start of the run and their
	// growth over it (-1 unknown).
	guestBefore, fwdBefore int64
	guest, fwd             int64

	// The node's Raft log writes and commits as its /metrics count them,
	// at the start of the window and their growth over it.
	raftBefore, raft raftCounts
	raftWindow       time.Duration
}

// raftCounts are a node's counts of Raft log writes, their time, its
// commits as leader, their time, and the entries it applied.
type raftCounts struct {
	known                bool
	at                   time.Time
	writes, writeSeconds float64
	commits, commitSecs  float64
	applied              float64
}

// The node's counters of where orders arrived (orders/metrics.go,
// node/metrics.go).
const (
	metricGuestAdmitted = `masterorder_orders_admitted_total{source="guest"}`
	metricForwarded     = "masterorder_forwarded_proposals_total"
)

// The node's Raft timings (node/metrics.go): its log writes (each a bbolt
// commit with fsync, timed), its commits as leader (propose -> applied
// there), the entries it applied.
const (
	metricLogWrites    = "masterorder_raft_log_write_seconds_count"
	metricLogWriteTime = "masterorder_raft_log_write_seconds_sum"
	metricCommits      = "masterorder_raft_commit_seconds_count"
	metricCommitTime   = "masterorder_raft_commit_seconds_sum"
	metricApplied      = "masterorder_fsm_applied_entries_total"
)

func (cl *closedLoop) newUsageProbes() []*usageProbe {
	ps := make([]*usageProbe, len(cl.urls))
	for i, base := range cl.urls {
		pid, _ := cl.cluster.pidOf(base)
		ps[i] = &usageProbe{cl: cl, base: base, pid: pid, wroteBefore: -1, wrote: -1, cpuBefore: -1, cpu: -1, heapInuse: -1,
			guestBefore: -1, fwdBefore: -1, guest: -1, fwd: -1}
	}
	return ps
}

// sampleUsage samples every node's RSS once a second until stop (the
// /metrics source has no peak of its own).
func (cl *closedLoop) sampleUsage(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			for _, u := range cl.usage {
				u.sampleRSS(ctx)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		for _, u := range cl.usage {
			u.sampleRSS(context.Background())
			u.sampleHeap(context.Background())
		}
	}
}

// sampleHeap reads the Go heap in use from the node's /metrics (spans
// holding objects, live or not yet collected): of the RSS at the end, how
// much is the heap.
func (u *usageProbe) sampleHeap(ctx context.Context) {
	h, err := u.metric(ctx, "go_memstats_heap_inuse_bytes")
	if err != nil {
		return
	}
	u.mu.Lock()
	u.heapInuse = h
	u.mu.Unlock()
}

func (u *usageProbe) sampleRSS(ctx context.Context) {
	var peak, rss int64
	var err error
	if u.pid != 0 {
		if peak, err = procStatusBytes(u.pid, "VmHWM"); err == nil {
			rss, err = procStatusBytes(u.pid, "VmRSS")
		}
	} else {
		rss, err = u.metric(ctx, "process_resident_memory_bytes")
		peak = rss
	}
	if err != nil {
		return
	}
	u.mu.Lock()
	u.peakRSS = max(u.peakRSS, peak)
	u.rss = rss
	u.mu.Unlock()
}

// orderCounters reads the node's guest orders admitted and proposals
// forwarded from its /metrics. A counter with labels appears only once
// counted: absent means 0 when the page was read.
func (u *usageProbe) orderCounters(ctx context.Context) (guest, fwd int64, err error) {
	m, err := u.metrics(ctx, metricGuestAdmitted, metricForwarded)
	if err != nil {
		return 0, 0, err
	}
	f, ok := m[metricForwarded]
	if !ok {
		return 0, 0, fmt.Errorf("/metrics: no %s", metricForwarded)
	}
	return m[metricGuestAdmitted], f, nil
}

func (u *usageProbe) countersBegin(ctx context.Context) {
	g, f, err := u.orderCounters(ctx)
	if err != nil {
		return
	}
	u.mu.Lock()
	u.guestBefore, u.fwdBefore = g, f
	u.mu.Unlock()
}

func (u *usageProbe) countersEnd(ctx context.Context) {
	g, f, err := u.orderCounters(ctx)
	if err != nil {
		return
	}
	u.mu.Lock()
	if u.guestBefore >= 0 {
		u.guest, u.fwd = g-u.guestBefore, f-u.fwdBefore
	}
	u.mu.Unlock()
}

// readRaft reads the node's Raft counts; known is false for a build
// without the log write timing.
func (u *usageProbe) readRaft(ctx context.Context) raftCounts {
	m, err := u.metricFloats(ctx, metricLogWrites, metricLogWriteTime, metricCommits, metricCommitTime, metricApplied)
	if err != nil {
		return raftCounts{}
	}
	_, known := m[metricLogWrites]
	return raftCounts{known: known, at: time.Now(), writes: m[metricLogWrites], writeSeconds: m[metricLogWriteTime],
		commits: m[metricCommits], commitSecs: m[metricCommitTime], applied: m[metricApplied]}
}

func (u *usageProbe) raftBegin(ctx context.Context) {
	r := u.readRaft(ctx)
	u.mu.Lock()
	u.raftBefore = r
	u.mu.Unlock()
}

func (u *usageProbe) raftEnd(ctx context.Context) {
	r := u.readRaft(ctx)
	u.mu.Lock()
	defer u.mu.Unlock()
	if b := u.raftBefore; b.known && r.known {
		u.raft = raftCounts{known: true, writes: r.writes - b.writes, writeSeconds: r.writeSeconds - b.writeSeconds,
			commits: r.commits - b.commits, commitSecs: r.commitSecs - b.commitSecs, applied: r.applied - b.applied}
		u.raftWindow = r.at.Sub(b.at)
	}
}

func (u *usageProbe) begin() {
	u.read(func(w int64, werr error, c time.Duration, cerr error) {
		if werr == nil {
			u.wroteBefore = w
		}
		if cerr == nil {
			u.cpuBefore = c
		}
	})
}

func (u *usageProbe) end() {
	u.read(func(w int64, werr error, c time.Duration, cerr error) {
		if werr == nil && u.wroteBefore >= 0 {
			u.wrote = w - u.wroteBefore
		}
		if cerr == nil && u.cpuBefore >= 0 {
			u.cpu = c - u.cpuBefore
		}
	})
}

// read reads the process's bytes written and CPU time and hands them to
// keep under u.mu (nothing without a local process).
func (u *usageProbe) read(keep func(w int64, werr error, c time.Duration, cerr error)) {
	if u.pid == 0 {
		return
	}
	w, werr := procIOBytes(u.pid, "write_bytes")
	c, cerr := procCPU(u.pid)
	u.mu.Lock()
	defer u.mu.Unlock()
	keep(w, werr, c, cerr)
}

func (u *usageProbe) result(orders int) NodeUsage {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := NodeUsage{URL: u.base, PID: u.pid, Source: "metrics", PeakRSSBytes: u.peakRSS, RSSBytes: u.rss, HeapInuseBytes: u.heapInuse, WrittenBytes: u.wrote, CPUSeconds: -1,
		GuestOrders: u.guest, Forwarded: u.fwd}
	if u.pid != 0 {
		r.Source = "proc"
	}
	if u.cpu >= 0 {
		r.CPUSeconds = round(u.cpu.Seconds(), 2)
		if orders > 0 {
			r.CPUMicrosPerOrder = round(float64(u.cpu)/float64(time.Microsecond)/float64(orders), 1)
		}
	}
	if u.wrote >= 0 && orders > 0 {
		r.WrittenBytesPerOrder = round(float64(u.wrote)/float64(orders), 0)
	}
	r.LogWritesPerSecond, r.EntriesPerLogWrite, r.LogWriteMillis, r.CommitMillis = -1, -1, -1, -1
	if rc := u.raft; rc.known && rc.writes > 0 && u.raftWindow > 0 {
		r.LogWritesPerSecond = round(rc.writes/u.raftWindow.Seconds(), 1)
		r.EntriesPerLogWrite = round(rc.applied/rc.writes, 1)
		r.LogWriteMillis = round(rc.writeSeconds*1000/rc.writes, 2)
		r.CommitMillis = 0
		if rc.commits > 0 {
			r.CommitMillis = round(rc.commitSecs*1000/rc.commits, 2)
		}
	}
	return r
}

// metric reads one unlabelled sample from the node's /metrics (staff
// token; loopback needs none).
func (u *usageProbe) metric(ctx context.Context, name string) (int64, error) {
	m, err := u.metrics(ctx, name)
	if err != nil {
		return 0, err
	}
	v, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("no %s", name)
	}
	return v, nil
}

// metrics reads the named samples from the node's /metrics as integers
// (metricFloats).
func (u *usageProbe) metrics(ctx context.Context, names ...string) (map[string]int64, error) {
	f, err := u.metricFloats(ctx, names...)
	return truncated(f), err
}

// metricFloats reads the named samples from the node's /metrics: a name
// is the sample as written there, labels included (`a_total{x="y"}`); the
// map holds those found.
func (u *usageProbe) metricFloats(ctx context.Context, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+u.cl.token)
	resp, err := u.cl.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return promFloats(bufio.NewScanner(resp.Body), names...)
}

// promSample finds "name value" in Prometheus text format.
func promSample(sc *bufio.Scanner, name string) (int64, error) {
	m, err := promSamples(sc, name)
	if err != nil {
		return 0, err
	}
	v, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("no %s", name)
	}
	return v, nil
}

// promSamples finds "name value" for each of names in Prometheus text
// format, as integers; the map holds those found.
func promSamples(sc *bufio.Scanner, names ...string) (map[string]int64, error) {
	f, err := promFloats(sc, names...)
	return truncated(f), err
}

// truncated is m with its values truncated to integers (nil for nil).
func truncated(m map[string]float64) map[string]int64 {
	if m == nil {
		return nil
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

// promFloats finds "name value" for each of names in Prometheus text
// format; the map holds those found.
func promFloats(sc *bufio.Scanner, names ...string) (map[string]float64, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	out := make(map[string]float64, len(names))
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name+" ")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = f
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// procStatusBytes reads a "Key:  N kB" line of /proc/PID/status.
func procStatusBytes(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte(key+":"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, key)
}

// procIOBytes reads a "key: N" line of /proc/PID/io.
func procIOBytes(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(key+":")); ok {
			return strconv.ParseInt(strings.TrimSpace(string(rest)), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/io: no %s", pid, key)
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on every
// Linux the store runs on).
const clockTick = 10 * time.Millisecond

// selfCPU is this process's user + system time (false where /proc is
// missing).
func selfCPU() (time.Duration, bool) {
	d, err := procCPU(os.Getpid())
	return d, err == nil
}

// procCPU is the process's user + system time from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: the fields start after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	// Fields 14 and 15 of the line (utime, stime) are 12 and 13 here.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: malformed times", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
}
