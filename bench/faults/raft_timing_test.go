//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/bench/powercut"
)

// TestMeasureRaftTiming is the measurement behind the Raft timing defaults
// (node/config.go, docs/performance.md "Raft timing on a Pi"): a
// three-process cluster slowed to a Raspberry Pi's speed — each process
// capped to a share of one core (cgroups, as systemd's CPUQuota= does),
// every box's card slow (20 ms fsyncs, 2 % of them stalling 500 ms) — under
// a lunch peak (20 tables × 3 guests), a hostile phone (junk requests, wrong
// passwords, garbage on the Raft port) and a backup every two minutes, for
// a long run: leader changes and term increases counted. Then the
// failover time at the same speed: the leader SIGKILLed, and the leader's
// power cut (its card loses what it had not synced). Root only; run by
// hand:
//
//	MASTERORDER_MEASURE_RAFT=1 [MASTERORDER_RAFT_TIMING=300ms,300ms,150ms] \
//	[MASTERORDER_CPU_PERCENT=25] [MASTERORDER_MEASURE_DURATION=10m] [MASTERORDER_FAILOVER_RUNS=5] \
//	go test -tags faults -count=1 -timeout 60m -run TestMeasureRaftTiming -v ./bench/faults/
//
// MASTERORDER_RAFT_TIMING is heartbeat, election and leader lease timeout
// ("" or "default": the build's defaults); MASTERORDER_MEASURE_DURATION=0
// skips the long run, MASTERORDER_FAILOVER_RUNS=0 the failovers.
func TestMeasureRaftTiming(t *testing.T) {
	if os.Getenv("MASTERORDER_MEASURE_RAFT") == "" {
		t.Skip("a measurement: MASTERORDER_MEASURE_RAFT=1")
	}
	timing, name := raftTimingFromEnv(t)
	cpu := envInt(t, "MASTERORDER_CPU_PERCENT", 25)
	d := envDuration(t, "MASTERORDER_MEASURE_DURATION", 10*time.Minute)
	runs := envInt(t, "MASTERORDER_FAILOVER_RUNS", 5)
	c := newCluster(t, clusterOpts{powercut: true, raft: timing, cpuPercent: cpu})
	slowCard := powercut.SpikeDelay(20*time.Millisecond, 500*time.Millisecond, 0.02)
	for _, id := range c.ids {
		c.nodes[id].fs.SetFsyncDelay(slowCard)
	}
	conditions := fmt.Sprintf("raft %s, CPU %d%% of a core per process, fsync 20 ms with 2%% at 500 ms", name, cpu)
	t.Logf("%s; load average %s at start (the machine is shared)", conditions, loadavg())

	if d > 0 {
		t.Run("Elections", func(t *testing.T) {
			c.t = t
			term0 := c.maxTerm()
			count := c.leaderChanges()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var hostile hostileCounts
			var backups backupCounts
			rep := storm(t, c, storeLoad(c, d), func() {
				wg.Go(func() { c.hostilePhone(ctx, &hostile) })
				wg.Go(func() { c.backups(ctx, 2*time.Minute, &backups) })
			})
			cancel()
			wg.Wait()
			changes := count()
			terms := c.maxTerm() - term0
			t.Logf("MEASURE elections, %s, %v under a lunch peak + hostile phone + backups: %d leader changes, %d term increases; "+
				"%.1f orders/s, order POST p50 %.0f ms p99 %.0f ms max %.0f ms; hostile %s; backups %s; %s; load average %s",
				conditions, d, changes, terms, rep.OrdersPerSecond, rep.RequestLatencyMs.P50, rep.RequestLatencyMs.P99, rep.RequestLatencyMs.Max,
				&hostile, &backups, c.cpuStats(), loadavg())
			c.checkReport(rep)
			c.checkState(rep)
		})
	}
	if runs > 0 {
		t.Run("FailoverSIGKILL", func(t *testing.T) {
			ms := measureFailoverBy(t, c, "SIGKILL", runs, c.kill)
			t.Logf("MEASURE failover SIGKILL, %s: %s", conditions, spread(ms))
		})
		t.Run("FailoverPowerCut", func(t *testing.T) {
			rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 36))
			ms := measureFailoverBy(t, c, "power cut", runs, func(id string) { c.powerCut(rng, id) })
			t.Logf("MEASURE failover power cut, %s: %s", conditions, spread(ms))
		})
	}
}

// raftTimingFromEnv reads MASTERORDER_RAFT_TIMING ("HB,EL,LEASE").
func raftTimingFromEnv(t *testing.T) (map[string]any, string) {
	v := os.Getenv("MASTERORDER_RAFT_TIMING")
	if v == "" || v == "default" {
		return nil, "defaults"
	}
	f := strings.Split(v, ",")
	if len(f) != 3 {
		t.Fatalf("MASTERORDER_RAFT_TIMING=%q: want heartbeat,election,lease (300ms,300ms,150ms)", v)
	}
	for _, s := range f {
		if _, err := time.ParseDuration(s); err != nil {
			t.Fatalf("MASTERORDER_RAFT_TIMING: %v", err)
		}
	}
	return map[string]any{"heartbeat_timeout": f[0], "election_timeout": f[1], "leader_lease_timeout": f[2]},
		"heartbeat " + f[0] + " election " + f[1] + " lease " + f[2]
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// maxTerm is the highest Raft term any running box reports: every
// election, won or not, raises it.
func (c *cluster) maxTerm() uint64 {
	var m uint64
	for _, id := range c.ids {
		if s, err := c.status(id); err == nil && s.Term > m {
			m = s.Term
		}
	}
	return m
}

func (c *cluster) cpuStats() string {
	var parts []string
	for _, id := range c.ids {
		if g := c.nodes[id].cpu; g != nil {
			th, p := g.throttled()
			parts = append(parts, fmt.Sprintf("%s throttled in %d of %d periods", id, th, p))
		}
	}
	return strings.Join(parts, ", ")
}

func spread(ms []float64) string {
	lo, hi, sum := ms[0], ms[0], 0.0
	for _, v := range ms {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	return fmt.Sprintf("min %.0f ms, mean %.0f ms, max %.0f ms over %d runs %v", lo, sum/float64(len(ms)), hi, len(ms), ms)
}

// hostileCounts are what the hostile phone got back.
type hostileCounts struct {
	requests, errors, fiveXX, raftJunk atomic.Int64
}

func (h *hostileCounts) String() string {
	return fmt.Sprintf("%d requests (%d 5xx, %d transport errors), %d junk connections to Raft ports",
		h.requests.Load(), h.fiveXX.Load(), h.errors.Load(), h.raftJunk.Load())
}

// hostilePhone is a phone on the store Wi-Fi that sends junk to every box,
// some 30 requests a second, until ctx ends: malformed orders, unknown
// paths, wrong staff passwords (each costs the box a password hash),
// oversized bodies without a token, and every second a connection to a
// Raft port that sends garbage instead of a TLS handshake. A plain client
// (its requests break the contract on purpose) from an address of its own,
// 127.0.0.9: the boxes lock that address out after a few wrong passwords,
// as they would the phone, not the staff and the bench on 127.0.0.1.
func (c *cluster) hostilePhone(ctx context.Context, n *hostileCounts) {
	phone := &net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9)}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: phone.DialContext}}
	big300k := bytes.Repeat([]byte("x"), 300<<10)
	tick := time.NewTicker(33 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id := c.ids[i%len(c.ids)]
		base := c.nodes[id].httpURL
		var req *http.Request
		switch i % 6 {
		case 0:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/guest/sessions/"+randHex(8)+"/orders", strings.NewReader(`{"items":[{"menuId":`))
			req.Header.Set("Idempotency-Key", "not-a-uuid")
		case 1:
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/"+randHex(6)+"/../../etc/passwd", nil)
		case 2:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/staff/login", strings.NewReader(`{"password":"guess-`+randHex(4)+`"}`))
		case 3:
			req, _ = http.NewRequestWithContext(ctx, http.MethodPut, base+"/api/staff/menu/x/image", bytes.NewReader(big300k))
			req.Header.Set("Content-Type", "image/jpeg")
		case 4:
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/cluster/status", nil)
		case 5:
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/kitchen/orders", nil)
			req.Header.Set("Authorization", "Bearer "+randHex(40))
		}
		if req.Header.Get("Content-Type") == "" && req.Body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		n.requests.Add(1)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				n.errors.Add(1)
			}
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				n.fiveXX.Add(1)
			}
		}
		if i%30 == 0 {
			if conn, err := phone.DialContext(ctx, "tcp", c.nodes[id].raftAddr); err == nil {
				conn.SetDeadline(time.Now().Add(time.Second))
				conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + randHex(64)))
				io.Copy(io.Discard, conn)
				conn.Close()
				n.raftJunk.Add(1)
			}
		}
	}
}

func randHex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[mrand.IntN(16)]
	}
	return string(b)
}

// backupCounts are the backups taken during a run.
type backupCounts struct {
	mu    sync.Mutex
	taken int
	bytes int64
	took  []time.Duration
	fails int
}

func (b *backupCounts) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d taken (%d failed), %d bytes in all, times %v", b.taken, b.fails, b.bytes, b.took)
}

// backups downloads a full backup (GET /api/staff/backup, the whole
// snapshot streamed) from one box after another, every interval, until ctx
// ends: an owner's nightly backup at the worst moment.
func (c *cluster) backups(ctx context.Context, every time.Duration, n *backupCounts) {
	client := &http.Client{Timeout: every, Transport: &http.Transport{Proxy: nil}}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every / 4):
		}
		id := c.ids[i%len(c.ids)]
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.nodes[id].httpURL+"/api/staff/backup", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		start := time.Now()
		resp, err := client.Do(req)
		var size int64
		if err == nil {
			size, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
		n.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				n.fails++
				c.t.Logf("backup from %s: %v", id, err)
			}
		} else {
			n.taken++
			n.bytes += size
			n.took = append(n.took, time.Since(start).Round(time.Millisecond))
		}
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(every - every/4):
		}
	}
}
