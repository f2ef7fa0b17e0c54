package node_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// selfRSSMiB is this test process's resident memory (all three in-process
// nodes and the callers).
func selfRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, _ := strconv.Atoi(f[1])
			return float64(kib) / 1024
		}
	}
	return 0
}

var benchKey atomic.Int64

// counter is the value of a counter in n's registry (0 when absent).
func counter(b testing.TB, n *node.Node, name string) float64 {
	families, err := n.Metrics().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// runSetIfAbsent runs b.N SetIfAbsent calls from callers goroutines through
// the given nodes (round robin by caller) and reports throughput, latency
// percentiles and how many times the leader wrote its log per call.
func runSetIfAbsent(b *testing.B, nodes []*node.Node, leader *node.Node, callers int) {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Int64
	var peakRSS atomic.Int64
	done := make(chan struct{})
	go func() { // sample RSS while the load runs
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if r := int64(selfRSSMiB() * 1024); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	writes0 := counter(b, leader, "masterorder_raft_log_writes_total")
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			n := nodes[c%len(nodes)]
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				key := "bench:" + strconv.FormatInt(benchKey.Add(1), 10)
				t0 := time.Now()
				ok, err := n.KV().SetIfAbsent(context.Background(), key, []byte("v"), time.Minute)
				lat[i] = time.Since(t0)
				if err != nil || !ok {
					failed.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(done)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d SetIfAbsent calls failed", f, b.N)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(peakRSS.Load())/1024, "peak-rss-MiB")
	b.ReportMetric((counter(b, leader, "masterorder_raft_log_writes_total")-writes0)/float64(b.N), "leader-log-writes/op")
}

// BenchmarkSetIfAbsent: one SetIfAbsent is one Raft command (fsync'd log
// append on a quorum, bbolt + SQLite apply on every node). Callers spread
// over the three nodes (two thirds are forwarded to the leader), or all
// on the leader. Loopback, mutual TLS on the Raft port (nodetest, as init
// sets it up), shipped Raft timeouts.
//
//	go test -bench SetIfAbsent -run '^$' -benchtime 3s ./node/
func BenchmarkSetIfAbsent(b *testing.B) {
	c := nodetest.Start(b, 3, lanTimeouts, nil, nil)
	_, leader := c.WaitLeader(10 * time.Second)
	c.WaitConverged(10 * time.Second)
	b.Logf("process RSS with three idle nodes: %.1f MiB", selfRSSMiB())
	for _, via := range []string{"all", "leader"} {
		nodes := c.Nodes
		if via == "leader" {
			nodes = []*node.Node{leader}
		}
		for _, callers := range []int{1, 16, 64, 256} {
			b.Run(fmt.Sprintf("via=%s/callers=%d", via, callers), func(b *testing.B) {
				runSetIfAbsent(b, nodes, leader, callers)
			})
		}
	}
}
