//go:build faults

package faults

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"masterorder/bench/powercut"
)

// repairLine is what a node logs when it found its FSM files damaged at
// start and set them aside.
const repairLine = "fsm files damaged: set aside"

// powerCut cuts the power of the given boxes at once: each process is
// SIGKILLed and its filesystem then loses everything it had not fsynced
// (and, at random, the last page written is torn). The boxes stay down
// until start.
func (c *cluster) powerCut(rng *rand.Rand, ids ...string) {
	c.t.Helper()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { c.kill(id) })
	}
	wg.Wait()
	for _, id := range ids {
		p := c.nodes[id]
		if p.fs == nil {
			c.t.Fatalf("%s has no power-cut filesystem", id)
		}
		tear := rng.IntN(2) == 0
		before := p.fs.Stats()
		if err := p.fs.Crash(powercut.CrashOptions{TearLastPage: tear}); err != nil {
			c.t.Fatalf("power cut %s: %v", id, err)
		}
		s := p.fs.Stats()
		if len(s.UndoErrors) > len(before.UndoErrors) {
			c.t.Errorf("power cut %s: the filesystem could not undo: %v", id, s.UndoErrors[len(before.UndoErrors):])
		}
		c.t.Logf("power cut %s: %d pages and %d appended bytes lost, %d names undone, torn page %v",
			id, s.DroppedPages-before.DroppedPages, s.DroppedBytes-before.DroppedBytes,
			s.UndoneEntries-before.UndoneEntries, s.TornPages > before.TornPages)
	}
}

// runPowerCuts runs a storm on a cluster whose data dirs are on power-cut
// filesystems, with frequent snapshots (so cuts land mid-snapshot and
// mid-restore), and checks everything afterwards: the bench's
// verification (every acknowledged order on every node, none twice),
// stock, the kitchen streams and byte-identical dumps.
func runPowerCuts(t *testing.T, d time.Duration, fault func(t *testing.T, c *cluster, rng *rand.Rand) int) {
	c := newCluster(t, clusterOpts{powercut: true, raft: snappy, logLevel: "debug"})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 12))
	sctx, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	ws := c.watchStreams(sctx)
	waitStreamsStarted(t, ws)
	cuts := 0
	rep := storm(t, c, stormConfig(c, d), func() { cuts = fault(t, c, rng) })
	for _, id := range c.ids {
		if !c.running(id) {
			t.Errorf("%s is not running after the schedule", id)
			c.start(id)
		}
	}
	c.waitConverged(90 * time.Second)
	c.checkReport(rep)
	orders := c.checkState(rep)
	c.checkStreams(ws, orders, rep)
	stopStreams()
	c.compareDumps()
	for _, id := range c.ids {
		t.Logf("%s: %d starts, %d damaged-file repairs, %d rebuilds from snapshot and log, %d snapshot restores at start, %d remote snapshots installed",
			id, c.logCount(id, `"fault-suite":"start`), c.logCount(id, repairLine), c.logCount(id, rebuildLine),
			c.logCount(id, "restored from snapshot"), c.logCount(id, "Installed remote snapshot"))
	}
	t.Logf("%d power cuts survived: %d orders acknowledged, none lost or duplicated", cuts, rep.Acknowledged)
}

// TestPowerCuts: one follower ×5 at random moments (right after its start,
// while it replays or restores, and once it is live, mid-batch or
// mid-snapshot); the leader ×3; all three boxes at once ×3. Each box is
// restarted as systemd would, with no repair by hand.
func TestPowerCuts(t *testing.T) {
	t.Run("Follower", func(t *testing.T) {
		runPowerCuts(t, 30*time.Second, func(t *testing.T, c *cluster, rng *rand.Rand) int {
			faultFollower(t, c, rng, 5, 60*time.Second, "cut", func(id string) { c.powerCut(rng, id) })
			return 5
		})
	})
	t.Run("Leader", func(t *testing.T) {
		runPowerCuts(t, 25*time.Second, func(t *testing.T, c *cluster, rng *rand.Rand) int {
			for i := range 3 {
				time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
				l := c.waitLeader(30 * time.Second)
				t.Logf("cut %d: leader %s", i+1, l)
				c.powerCut(rng, l)
				nl := c.waitLeader(30 * time.Second)
				t.Logf("new leader %s", nl)
				time.Sleep(time.Duration(300+rng.IntN(1700)) * time.Millisecond)
				c.start(l)
				c.waitReady(l, 60*time.Second)
			}
			return 3
		})
	})
	t.Run("AllAtOnce", func(t *testing.T) {
		runPowerCuts(t, 25*time.Second, func(t *testing.T, c *cluster, rng *rand.Rand) int {
			for i := range 3 {
				time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
				t.Logf("cut %d: all three boxes", i+1)
				c.powerCut(rng, c.ids...)
				time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
				for _, id := range c.ids {
					c.start(id)
				}
				c.waitLeader(60 * time.Second)
				for _, id := range c.ids {
					c.waitReady(id, 60*time.Second)
				}
			}
			return 3
		})
	})
}

// damageByHand does to a stopped node's fsm/ what the issue describes: the
// bbolt file truncated to a third, 16 KiB of zeros in the middle of the
// SQLite file, the WAL deleted.
func damageByHand(t *testing.T, fsmDir string) {
	t.Helper()
	bpath := filepath.Join(fsmDir, "fsm.bolt")
	fi, err := os.Stat(bpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(bpath, fi.Size()/3); err != nil {
		t.Fatal(err)
	}
	spath := filepath.Join(fsmDir, "domain.sqlite")
	f, err := os.OpenFile(spath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	sfi, _ := f.Stat()
	off := sfi.Size() / 2 &^ 4095
	if _, err := f.WriteAt(make([]byte, 16<<10), off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wal := filepath.Join(fsmDir, "domain.sqlite-wal")
	var walSize int64
	if wfi, err := os.Stat(wal); err == nil {
		walSize = wfi.Size()
	}
	if err := os.Remove(wal); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	t.Logf("damaged %s: bbolt %d → %d bytes, 16 KiB of zeros at %d of %d in SQLite, WAL of %d bytes deleted",
		fsmDir, fi.Size(), fi.Size()/3, off, sfi.Size(), walSize)
}

// TestDamagedByHand: a follower, then the leader, is killed, its fsm/
// damaged by hand, and restarted: it must start (no panic, no exit 2),
// set the files aside, rebuild, become ready and converge, and orders go
// on through it.
func TestDamagedByHand(t *testing.T) {
	c, rep := settledCluster(t)
	for _, role := range []string{"follower", "former leader"} {
		l := c.waitLeader(10 * time.Second)
		id := l
		if role == "follower" {
			id = c.followers(l)[0]
		}
		// The follower is stopped cleanly (SQLite checkpoints its WAL into
		// the file, so the zeros land on real pages), the leader killed
		// (its latest batches are in the WAL that is deleted).
		if role == "follower" {
			t.Logf("%s %s: SIGTERM, damage, restart", role, id)
			c.stop(id)
		} else {
			t.Logf("%s %s: kill -9, damage, restart", role, id)
			c.kill(id)
		}
		damageByHand(t, filepath.Join(c.nodes[id].dataDir, "fsm"))
		before := c.logCount(id, repairLine)
		c.start(id)
		c.waitReady(id, 90*time.Second)
		if got := c.logCount(id, repairLine); got != before+1 {
			t.Errorf("%s did not log setting its files aside (log tail:\n%s)", id, c.logTail(id, 10))
		}
		if _, err := os.Stat(filepath.Join(c.nodes[id].dataDir, "fsm", "set-aside", "fsm.bolt")); err != nil {
			t.Errorf("%s: the damaged bbolt file was not set aside: %v", id, err)
		}
		c.waitConverged(90 * time.Second)
		// More orders after the repair, through the repaired node too.
		moreOrders(t, c)
	}
	c.checkState(rep)
	c.compareDumps()
}
