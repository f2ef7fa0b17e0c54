//go:build faults

package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuGroup caps the processes put in it to a share of one core, with the
// kernel's CFS bandwidth control in 100 ms periods, as systemd's
// CPUQuota= does: a box slowed to a Raspberry Pi's speed, stalls between
// periods included. cgroup v2 (cpu.max) where the cpu controller is
// there, else v1's cpu controller (cpu.cfs_quota_us). Root only.
type cpuGroup struct {
	dir    string
	parent string // where its processes go back to
}

// cgroupRoot is the cgroup file system's mount point.
const cgroupRoot = "/sys/fs/cgroup"

// newCPUGroup makes a cgroup that allows percent of one core; it is
// removed when the test ends (after the nodes are killed: register it
// before killAll).
func newCPUGroup(t testing.TB, name string, percent int) *cpuGroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a CPU quota per process needs root (cgroups)")
	}
	quota := strconv.Itoa(percent * 1000) // µs per 100 ms period
	var g cpuGroup
	if ctrl, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil && strings.Contains(" "+string(ctrl)+" ", " cpu ") {
		// v2: the root's children may use the cpu controller.
		if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			t.Fatalf("enable the cpu controller: %v", err)
		}
		g = cpuGroup{dir: filepath.Join(cgroupRoot, name), parent: cgroupRoot}
		mkCgroup(t, g.dir)
		writeCgroup(t, g.dir, "cpu.max", quota+" 100000")
	} else if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu", "cpu.cfs_quota_us")); err == nil {
		g = cpuGroup{dir: filepath.Join(cgroupRoot, "cpu", name), parent: filepath.Join(cgroupRoot, "cpu")}
		mkCgroup(t, g.dir)
		writeCgroup(t, g.dir, "cpu.cfs_period_us", "100000")
		writeCgroup(t, g.dir, "cpu.cfs_quota_us", quota)
	} else {
		t.Skip("no cgroup cpu controller here")
	}
	t.Cleanup(func() {
		// Whatever is still in it goes back to the parent; then it can go.
		if b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				os.WriteFile(filepath.Join(g.parent, "cgroup.procs"), []byte(pid), 0)
			}
		}
		for range 50 {
			if err := os.Remove(g.dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("cgroup %s left behind", g.dir)
	})
	return &g
}

func mkCgroup(t testing.TB, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		t.Fatalf("make cgroup %s: %v", dir, err)
	}
}

func writeCgroup(t testing.TB, dir, file, value string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		t.Fatalf("cgroup %s/%s = %s: %v", dir, file, value, err)
	}
}

// add moves a process (all its threads) into the group.
func (g *cpuGroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// throttled reads how many 100 ms periods the group ran out of its quota,
// of how many it ran in.
func (g *cpuGroup) throttled() (throttled, periods int64) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "nr_throttled":
			throttled = v
		case "nr_periods":
			periods = v
		}
	}
	return throttled, periods
}

func (g *cpuGroup) String() string {
	th, p := g.throttled()
	return fmt.Sprintf("%s (throttled in %d of %d periods)", filepath.Base(g.dir), th, p)
}
