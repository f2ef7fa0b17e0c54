//go:build faults

package faults

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"masterorder/bench"
	"masterorder/bench/powercut"
)

// A slow card (issue 31): fsync stalls on the power-cut filesystem
// (powercut.SetFsyncDelay), as a worn SD card stalls while it
// wear-levels.

// leaderChanges counts the leader changes seen from outside (polling every
// 100 ms) until stop is called.
func (c *cluster) leaderChanges() (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	changes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for ctx.Err() == nil {
			if l := c.leader(); l != "" {
				mu.Lock()
				if last != "" && l != last {
					changes++
					c.t.Logf("leader changed: %s -> %s", last, l)
				}
				mu.Unlock()
				last = l
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return changes
	}
}

// storeLoad is about a store's lunch load: 20 tables × 3 guests, each
// waiting out the cooldown between orders, some 20 orders/s.
func storeLoad(c *cluster, d time.Duration) bench.Config {
	cfg := stormConfig(c, d)
	cfg.Tables = 20
	return cfg
}

// TestSlowFollowerFsyncSpikes: one follower's fsyncs now and then stall
// for 2 s during a storm. Its heartbeats must not wait behind them (Raft
// answers heartbeats outside the log write), so there is at most one
// leader change, and no acknowledged order is lost or doubled.
func TestSlowFollowerFsyncSpikes(t *testing.T) {
	c := newCluster(t, clusterOpts{powercut: true, raft: snappy})
	leader := c.waitLeader(15 * time.Second)
	slow := c.followers(leader)[0]
	c.nodes[slow].fs.SetFsyncDelay(powercut.SpikeDelay(0, 2*time.Second, 0.05))
	defer c.nodes[slow].fs.SetFsyncDelay(nil)
	count := c.leaderChanges()
	rep := storm(t, c, storeLoad(c, 30*time.Second), func() {
		// The box says its card is slow (a Raft log write over
		// disk.slow_write), and the others show it.
		took := c.waitDiskState(slow, "slow", 25*time.Second)
		t.Logf("follower %s says its card is slow after %v", slow, took.Round(time.Millisecond))
		c.waitPeerDisk(leader, slow, "slow", 10*time.Second)
	})
	changes := count()
	c.nodes[slow].fs.SetFsyncDelay(nil)
	t.Logf("2 s fsync spikes on follower %s: %d leader changes; order latency p50 %.0f ms p99 %.0f ms max %.0f ms, %.1f orders/s",
		slow, changes, rep.RequestLatencyMs.P50, rep.RequestLatencyMs.P99, rep.RequestLatencyMs.Max, rep.OrdersPerSecond)
	if changes > 1 {
		t.Errorf("%d leader changes under fsync spikes on one follower (at most 1 allowed)", changes)
	}
	c.checkReport(rep)
	checkNo5xx(t, rep)
	c.checkState(rep)
	c.compareDumps()
}

// TestMeasureFsyncDelays is the measurement of issue 31's closing note
// (run by hand, not in CI: MASTERORDER_MEASURE_FSYNC=1): p50/p99 of a
// guest order at a store's load with every box's fsync delayed by 0, 20
// and 200 ms, and with 2 s spikes on one follower, and the leader changes.
//
//	MASTERORDER_MEASURE_FSYNC=1 go test -tags faults -count=1 -run TestMeasureFsyncDelays -v ./bench/faults/
func TestMeasureFsyncDelays(t *testing.T) {
	if os.Getenv("MASTERORDER_MEASURE_FSYNC") == "" {
		t.Skip("a measurement: MASTERORDER_MEASURE_FSYNC=1")
	}
	for _, run := range []struct {
		name  string
		all   powercut.DelayFunc // every box
		spike bool               // 2 s spikes on one follower
	}{
		{"fsync 0 ms", nil, false},
		{"fsync 20 ms", powercut.ConstantDelay(20 * time.Millisecond), false},
		{"fsync 200 ms", powercut.ConstantDelay(200 * time.Millisecond), false},
		{"2 s spikes on one follower", nil, true},
	} {
		t.Run(run.name, func(t *testing.T) {
			c := newCluster(t, clusterOpts{powercut: true, raft: snappy})
			var count func() int
			// 40 tables × 3 guests: about 20 orders/s get through the
			// cooldowns and the per-table burst window.
			cfg := storeLoad(c, 20*time.Second)
			cfg.Tables = 40
			// The card slows down once the orders flow (setup on a normal
			// card: the measure is of guests' orders).
			rep := storm(t, c, cfg, func() {
				leader := c.waitLeader(15 * time.Second)
				for _, id := range c.ids {
					c.nodes[id].fs.SetFsyncDelay(run.all)
				}
				if run.spike {
					c.nodes[c.followers(leader)[0]].fs.SetFsyncDelay(powercut.SpikeDelay(0, 2*time.Second, 0.05))
				}
				count = c.leaderChanges()
			})
			changes := count()
			for _, id := range c.ids {
				c.nodes[id].fs.SetFsyncDelay(nil)
			}
			t.Logf("MEASURE %s: %.1f orders/s, order POST p50 %.0f ms p99 %.0f ms max %.0f ms, %d leader changes, ok=%v",
				run.name, rep.OrdersPerSecond, rep.RequestLatencyMs.P50, rep.RequestLatencyMs.P99, rep.RequestLatencyMs.Max, changes, rep.OK())
		})
	}
}
