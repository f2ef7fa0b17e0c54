//go:build faults

package faults

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"masterorder/bench"
)

// The SD card's own failures (issue 31), on real processes whose data
// directories each sit on a small file system of their own, with Raft
// logs compacted past snapshots (snappy): a card that fills up and is
// freed, on a follower and on the leader, during a storm. The boxes heal
// themselves: none is restarted by the test.

// mountTmpfs mounts a tmpfs of size at dir for the test (root only) and
// unmounts it on every path.
func mountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited file system needs root")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0750", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs at %s: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			// A process still holding a file: detach it anyway.
			t.Logf("umount %s: %v %s; detaching", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
}

// fillDisk writes dir/filler until the file system refuses (ENOSPC),
// down to the last block; it returns the bytes written.
func fillDisk(t testing.TB, dir string) int64 {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "filler"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int64
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10} {
		buf := make([]byte, chunk)
		for i := range buf {
			buf[i] = byte(i)
		}
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill %s: %v", dir, err)
				}
				break
			}
		}
	}
	return n
}

func freeDisk(t testing.TB, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
}

// waitDiskState waits until id's own status says state; it returns the
// time it took.
func (c *cluster) waitDiskState(id, state string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		s, err := c.status(id)
		if err == nil && s.Disk != nil && s.Disk.State == state {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("%s's disk not %q within %v (status %+v, %v)", id, state, timeout, s.Disk, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCurrent waits until id is ready and has applied what the leader
// had committed when the wait began.
func (c *cluster) waitCurrent(id string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	var target uint64
	for target == 0 {
		if l := c.leader(); l != "" {
			if s, err := c.status(l); err == nil {
				target = s.CommitIndex
			}
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("no leader to judge %s current by within %v", id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		s, err := c.status(id)
		if err == nil && s.AppliedIndex >= target && c.ready(id) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("%s not current (applied ≥ %d, ready) within %v: %+v %v", id, target, timeout, s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitAged waits until id has taken a snapshot and compacted its log.
func (c *cluster) waitAged(id string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for c.logCount(id, "compacting logs") == 0 {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s compacted no log within %v", id, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkNo5xx fails on any answer of 5xx but a 503 with a reason code.
func checkNo5xx(t *testing.T, rep *bench.Report) {
	t.Helper()
	for reason, n := range rep.Rejections {
		if strings.HasPrefix(reason, "HTTP_5") || reason == "INTERNAL" {
			t.Errorf("%d order answers were %s (only a 503 with a reason code may be)", n, reason)
		}
	}
	t.Logf("rejections during the run: %v", rep.Rejections)
}

// TestDiskFullFollowerThenLeader fills a follower's card during a storm,
// frees it, then the leader's, and frees it: orders go on (through a new
// leader within seconds), each box catches up by itself, and nothing is
// lost, doubled or left disagreeing.
func TestDiskFullFollowerThenLeader(t *testing.T) {
	c := newCluster(t, clusterOpts{raft: snappy, logLevel: "debug", tmpfs: "64m"})
	pids := map[string]int{}
	for _, id := range c.ids {
		pids[id] = c.pid(id)
	}
	cfg := stormConfig(c, 60*time.Second)
	rep := storm(t, c, cfg, func() {
		leader := c.waitLeader(15 * time.Second)
		victim := c.followers(leader)[0]
		c.waitAged(victim, 30*time.Second)
		c.waitAged(leader, 30*time.Second)

		// A follower's card fills up.
		n := fillDisk(t, c.nodes[victim].dataDir)
		t.Logf("follower %s: card filled (%d bytes written)", victim, n)
		took := c.waitDiskState(victim, "full", 10*time.Second)
		t.Logf("follower %s says its card is full after %v", victim, took.Round(time.Millisecond))
		c.waitPeerDisk(leader, victim, "full", 10*time.Second)
		time.Sleep(5 * time.Second)
		freeDisk(t, c.nodes[victim].dataDir)
		took = c.waitCurrent(victim, 60*time.Second)
		t.Logf("follower %s current %v after its card was freed", victim, took.Round(time.Millisecond))
		c.waitDiskState(victim, "ok", 10*time.Second)

		// The leader's card fills up.
		leader = c.waitLeader(15 * time.Second)
		n = fillDisk(t, c.nodes[leader].dataDir)
		filled := time.Now()
		t.Logf("leader %s: card filled (%d bytes written)", leader, n)
		var next string
		for next == "" || next == leader {
			if time.Since(filled) > 30*time.Second {
				t.Fatalf("no other leader within 30 s of %s's card filling", leader)
			}
			next = c.leader()
			if next != "" && next != leader && !c.ready(next) {
				next = ""
			}
			time.Sleep(20 * time.Millisecond)
		}
		gap := time.Since(filled)
		t.Logf("leader %s's card full: %s leads and is ready %v later", leader, next, gap.Round(time.Millisecond))
		time.Sleep(5 * time.Second)
		freeDisk(t, c.nodes[leader].dataDir)
		took = c.waitCurrent(leader, 60*time.Second)
		t.Logf("old leader %s current %v after its card was freed", leader, took.Round(time.Millisecond))
		c.waitDiskState(leader, "ok", 10*time.Second)
		for _, id := range []string{victim, leader} {
			t.Logf("%s: %d pauses of its state machine, %d resumes, %d failed raft log writes", id,
				c.logCount(id, "state machine paused"), c.logCount(id, "state machine resumed"), c.logCount(id, "raft log write failed"))
		}
	})
	for _, id := range c.ids {
		if !c.running(id) || c.pid(id) != pids[id] {
			t.Errorf("%s was restarted or is not running (pid %d, was %d)", id, c.pid(id), pids[id])
		}
	}
	c.checkReport(rep)
	checkNo5xx(t, rep)
	c.checkState(rep)
	c.compareDumps()
}

// waitPeerDisk waits until from's status shows member id's card in state.
func (c *cluster) waitPeerDisk(from, id, state string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, err := c.status(from)
		if err == nil {
			for _, m := range s.Nodes {
				if m.ID == id && m.Disk != nil && m.Disk.State == state {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s's status does not show %s's card %q within %v: %+v %v", from, id, state, timeout, s.Nodes, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountExt4 makes an ext4 image of size and loop-mounts it at dir with
// errors=remount-ro (as a box's card), unmounted on every path.
func mountExt4(t testing.TB, image, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting an ext4 image needs root")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"truncate", "-s", size, image}, {"mkfs.ext4", "-q", "-F", image}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	mountImage(t, image, dir)
	t.Cleanup(func() { unmountImage(t, dir) })
}

func mountImage(t testing.TB, image, dir string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", image, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount %s at %s: %v\n%s", image, dir, err, out)
	}
}

func unmountImage(t testing.TB, dir string) {
	if exec.Command("findmnt", dir).Run() != nil {
		return // not mounted
	}
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		t.Logf("umount %s: %v %s; detaching", dir, err, out)
		exec.Command("umount", "-l", dir).Run()
	}
}

// loopDev is the loop device (loopN) mounted at dir.
func loopDev(t testing.TB, dir string) string {
	t.Helper()
	out, err := exec.Command("findmnt", "-no", "SOURCE", dir).Output()
	if err != nil {
		t.Fatalf("findmnt %s: %v", dir, err)
	}
	return filepath.Base(strings.TrimSpace(string(out)))
}

// exitCode waits until id's process has exited (within timeout) and
// returns its exit status.
func (c *cluster) exitCode(id string, timeout time.Duration) int {
	c.t.Helper()
	cmd, done := c.nodes[id].current()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		c.t.Fatalf("%s did not exit within %v", id, timeout)
		return 0
	}
}

// TestDiskReadOnlyFollowerExitsToItsUnit turns a follower's ext4 card
// read-only (/sys/fs/ext4/<dev>/trigger_fs_error, as a failing card does
// with errors=remount-ro) during a storm. A read-only ext4 cannot be made
// writable again while mounted (the kernel refuses remount,rw after an
// error), so the box cannot recover in place: it says so (status
// "readonly", seen by the others too), gives up nothing acknowledged,
// and exits non-zero (not 2) after disk.readonly_exit_after. The test
// then does what its unit and the reboot do: e2fsck, mount, start it
// again; the box rebuilds and is current, and nothing is lost, doubled
// or left disagreeing.
func TestDiskReadOnlyFollowerExitsToItsUnit(t *testing.T) {
	c := newCluster(t, clusterOpts{raft: snappy, logLevel: "debug", ext4: "128M", disk: map[string]any{"readonly_exit_after": "5s"}})
	rep := storm(t, c, stormConfig(c, 40*time.Second), func() {
		leader := c.waitLeader(15 * time.Second)
		victim := c.followers(leader)[0]
		c.waitAged(victim, 30*time.Second)
		p := c.nodes[victim]
		dev := loopDev(t, p.dataDir)
		if err := os.WriteFile("/sys/fs/ext4/"+dev+"/trigger_fs_error", []byte("masterorder fault suite\n"), 0o200); err != nil {
			t.Fatalf("trigger_fs_error on %s: %v", dev, err)
		}
		broke := time.Now()
		t.Logf("follower %s: ext4 on %s turned read-only", victim, dev)
		took := c.waitDiskState(victim, "readonly", 15*time.Second)
		t.Logf("follower %s says its card is read-only after %v", victim, took.Round(time.Millisecond))
		c.waitPeerDisk(leader, victim, "readonly", 10*time.Second)
		code := c.exitCode(victim, 60*time.Second)
		t.Logf("follower %s exited with status %d %v after its card went read-only", victim, code, time.Since(broke).Round(time.Millisecond))
		if code == 0 || code == 2 {
			t.Errorf("exit status %d: want non-zero and not 2 (2 is a configuration error)", code)
		}
		// Its unit and the reboot: check the file system, mount it, start.
		unmountImage(t, p.dataDir)
		out, err := exec.Command("e2fsck", "-fy", p.image).CombinedOutput()
		t.Logf("e2fsck: %v\n%s", err, out)
		mountImage(t, p.image, p.dataDir)
		c.start(victim)
		took = c.waitCurrent(victim, 90*time.Second)
		t.Logf("follower %s current %v after its restart by the unit", victim, took.Round(time.Millisecond))
		c.waitDiskState(victim, "ok", 10*time.Second)
	})
	c.checkReport(rep)
	checkNo5xx(t, rep)
	c.checkState(rep)
	c.compareDumps()
}
