//go:build faults

// Process-level tests: the real binary, three `masterorder run` processes
// on loopback with the configs and mutual TLS that `masterorder init`
// writes, and kill -9.
//
//	go test -tags faults -count=1 -run 'Process' -v ./node/
package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node/nodetest"
)

const processPassword = "process-test-pw"

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// masterorderBinary builds the binary once per test process.
func masterorderBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "masterorder-process-")
		if err != nil {
			buildErr = err
			return
		}
		builtBinary = filepath.Join(dir, "masterorder")
		out, err := exec.Command("go", "build", "-o", builtBinary, "..").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

// procCluster is three `masterorder run` processes.
type procCluster struct {
	t     *testing.T
	bin   string
	dir   string
	ids   []string
	http  map[string]string // id -> host:port
	mu    sync.Mutex
	procs map[string]*exec.Cmd
	cli   *http.Client
}

func startProcCluster(t *testing.T) *procCluster {
	t.Helper()
	pc := initProcCluster(t)
	for _, id := range pc.ids {
		pc.start(id)
	}
	return pc
}

// initProcCluster writes the three configs (masterorder init) and starts
// nothing yet.
func initProcCluster(t *testing.T) *procCluster {
	t.Helper()
	pc := &procCluster{t: t, bin: masterorderBinary(t), dir: t.TempDir(), ids: []string{"a", "b", "c"},
		http: map[string]string{}, procs: map[string]*exec.Cmd{}, cli: apitest.Client(t, &http.Client{Timeout: 3 * time.Second})}
	var spec []string
	for _, id := range pc.ids {
		h, r := nodetest.FreePort(t), nodetest.FreePort(t)
		pc.http[id] = fmt.Sprintf("127.0.0.1:%d", h)
		spec = append(spec, fmt.Sprintf("%s=127.0.0.1:%d:%d", id, h, r))
	}
	out, err := exec.Command(pc.bin, "init", "--shop-id", "t", "--nodes", strings.Join(spec, ","),
		"--out", pc.dir, "--staff-password", processPassword, "--plain-http").CombinedOutput()
	if err != nil {
		t.Fatalf("masterorder init: %v\n%s", err, out)
	}
	t.Cleanup(pc.killAll)
	return pc
}

// start runs `masterorder run --config DIR/id.toml` in its own process
// group, its output appended to DIR/id.log.
func (pc *procCluster) start(id string) {
	pc.t.Helper()
	pc.startEnv(id, nil)
}

// startEnv is start with more environment (a unit's NOTIFY_SOCKET,
// INVOCATION_ID).
func (pc *procCluster) startEnv(id string, env []string) {
	pc.t.Helper()
	logf, err := os.OpenFile(filepath.Join(pc.dir, id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		pc.t.Fatal(err)
	}
	cmd := exec.Command(pc.bin, "run", "--config", filepath.Join(pc.dir, id+".toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		pc.t.Fatalf("start %s: %v", id, err)
	}
	logf.Close()
	pc.mu.Lock()
	pc.procs[id] = cmd
	pc.mu.Unlock()
}

// kill sends SIGKILL to node id's process group and reaps it.
func (pc *procCluster) kill(id string) {
	pc.mu.Lock()
	cmd := pc.procs[id]
	delete(pc.procs, id)
	pc.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

func (pc *procCluster) killAll() {
	for _, id := range pc.ids {
		pc.kill(id)
	}
	if pc.t.Failed() {
		for _, id := range pc.ids {
			if b, err := os.ReadFile(filepath.Join(pc.dir, id+".log")); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				pc.t.Logf("last log lines of %s:\n%s", id, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	}
}

func (pc *procCluster) pid(id string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if cmd := pc.procs[id]; cmd != nil {
		return cmd.Process.Pid
	}
	return 0
}

type procStatus struct {
	NodeID       string               `json:"nodeId"`
	State        string               `json:"state"`
	Leader       *struct{ ID string } `json:"leader"`
	CommitIndex  uint64               `json:"commitIndex"`
	AppliedIndex uint64               `json:"appliedIndex"`
}

func (pc *procCluster) status(id string) (procStatus, error) {
	var s procStatus
	resp, err := pc.cli.Get("http://" + pc.http[id] + "/api/cluster/status")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("status %d", resp.StatusCode)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

func (pc *procCluster) ready(id string) bool {
	resp, err := pc.cli.Get("http://" + pc.http[id] + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// leader waits for a node that says it leads and is ready.
func (pc *procCluster) leader(timeout time.Duration) string {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, id := range pc.ids {
			if pc.pid(id) == 0 {
				continue
			}
			if s, err := pc.status(id); err == nil && s.State == "leader" && pc.ready(id) {
				return id
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	pc.t.Fatalf("no ready leader within %v", timeout)
	return ""
}

func (pc *procCluster) do(id, method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+pc.http[id]+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := pc.cli.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

func (pc *procCluster) login(id string) string {
	pc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, b, err := pc.do(id, "POST", "/api/staff/login", "", map[string]string{"password": processPassword})
		if err == nil && code == http.StatusOK {
			var r struct{ Token string }
			if json.Unmarshal(b, &r) == nil && r.Token != "" {
				return r.Token
			}
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("login on %s: %d %s %v", id, code, b, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// putMenu writes a menu item through node id until it succeeds or the
// deadline passes; it returns when the write was acknowledged.
func (pc *procCluster) putMenu(id, token, menuID string, price int, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, b, err := pc.do(id, "PUT", "/api/staff/menu/"+menuID, token,
			map[string]any{"name": "醤油", "nameEn": "Shoyu", "category": "noodles", "price": price, "available": true})
		if err == nil && code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("PUT menu %s through %s: %d %s %v", menuID, id, code, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCaughtUp waits until node id is ready and has applied at least
// index.
func (pc *procCluster) waitCaughtUp(id string, index uint64, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, err := pc.status(id)
		if err == nil && s.AppliedIndex >= index && pc.ready(id) {
			return
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("node %s not ready/caught up to %d within %v (status %+v, %v)", id, index, timeout, s, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// rssKiB reads a process's resident memory from /proc.
func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// The whole path a store owner sees: init, three processes, the leader
// killed with SIGKILL, a write through a survivor, the killed box
// restarted from its files and caught up.
func TestProcessKillLeaderWriteThroughSurvivorRejoin(t *testing.T) {
	pc := startProcCluster(t)
	leader := pc.leader(30 * time.Second)
	var survivor string
	for _, id := range pc.ids {
		if id != leader {
			survivor = id
			break
		}
	}
	token := pc.login(survivor)
	pc.putMenu(leader, token, "ramen", 900, 10*time.Second)
	t.Logf("leader %s; RSS of the three processes at idle: %d, %d, %d KiB", leader,
		rssKiB(pc.pid("a")), rssKiB(pc.pid("b")), rssKiB(pc.pid("c")))

	pc.kill(leader)
	killed := time.Now()
	pc.putMenu(survivor, token, "ramen", 950, 20*time.Second)
	t.Logf("write through survivor %s acknowledged %v after kill -9 of leader %s", survivor, time.Since(killed).Round(time.Millisecond), leader)
	s, err := pc.status(survivor)
	if err != nil {
		t.Fatal(err)
	}

	pc.start(leader)
	pc.waitCaughtUp(leader, s.AppliedIndex, 30*time.Second)
	t.Logf("%s restarted and caught up to %d", leader, s.AppliedIndex)
	// The rejoined node serves the write it missed.
	code, b, err := pc.do(leader, "GET", "/api/staff/menu", token, nil)
	if err != nil || code != http.StatusOK || !bytes.Contains(b, []byte(`"price":950`)) {
		t.Fatalf("menu on the rejoined node: %d %s %v", code, b, err)
	}
	// And it takes part again: a write through it commits.
	pc.putMenu(leader, token, "gyoza", 500, 10*time.Second)
}

// Failover figures: kill -9 the leader five times; each time, the time
// from the kill to the first acknowledged write through a survivor.
func TestProcessFailoverTimes(t *testing.T) {
	pc := startProcCluster(t)
	leader := pc.leader(30 * time.Second)
	var token string
	for _, id := range pc.ids {
		if id != leader {
			token = pc.login(id)
			break
		}
	}
	var times []time.Duration
	for round := 0; round < 5; round++ {
		leader = pc.leader(30 * time.Second)
		pc.putMenu(leader, token, "ramen", 900+round, 10*time.Second)
		var survivors []string
		for _, id := range pc.ids {
			if id != leader {
				survivors = append(survivors, id)
			}
		}
		pc.kill(leader)
		killed := time.Now()
		// Clients write through either survivor, as order-sdk.js does.
		deadline := killed.Add(30 * time.Second)
		for k := 0; ; k++ {
			id := survivors[k%2]
			code, _, err := pc.do(id, "PUT", "/api/staff/menu/failover", token,
				map[string]any{"name": "x", "category": "noodles", "price": round + 1, "available": true})
			if err == nil && code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no write within 30 s of killing %s", round, leader)
			}
			time.Sleep(5 * time.Millisecond)
		}
		d := time.Since(killed)
		times = append(times, d)
		t.Logf("round %d: killed leader %s, first write through a survivor after %v", round+1, leader, d.Round(time.Millisecond))
		s, err := pc.status(survivors[0])
		if err != nil {
			t.Fatal(err)
		}
		pc.start(leader)
		pc.waitCaughtUp(leader, s.AppliedIndex, 30*time.Second)
	}
	slices.Sort(times)
	t.Logf("failover (kill -9 leader -> first acknowledged write through a survivor), 5 rounds: min %v median %v max %v",
		times[0].Round(time.Millisecond), times[2].Round(time.Millisecond), times[4].Round(time.Millisecond))
	t.Logf("RSS after the rounds: a %d KiB, b %d KiB, c %d KiB", rssKiB(pc.pid("a")), rssKiB(pc.pid("b")), rssKiB(pc.pid("c")))
}

// Resident memory of one node process at idle and while 64 callers write
// (PUT /api/staff/menu, one Raft command each) through all three nodes
// for a few seconds.
func TestProcessMemoryUnderLoad(t *testing.T) {
	pc := startProcCluster(t)
	pc.leader(30 * time.Second)
	token := pc.login("a")
	time.Sleep(time.Second)
	idle := map[string]int{}
	for _, id := range pc.ids {
		idle[id] = rssKiB(pc.pid(id))
	}
	const callers = 64
	var ok, bad atomic.Int64
	var peakMu sync.Mutex
	peak := map[string]int{}
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			peakMu.Lock()
			for _, id := range pc.ids {
				peak[id] = max(peak[id], rssKiB(pc.pid(id)))
			}
			peakMu.Unlock()
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	cli := apitest.Client(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: callers}})
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			id := pc.ids[c%3]
			for k := 0; time.Since(start) < 5*time.Second; k++ {
				body, _ := json.Marshal(map[string]any{"name": "x", "category": "noodles", "price": k, "available": true})
				req, _ := http.NewRequest("PUT", fmt.Sprintf("http://%s/api/staff/menu/load-%d", pc.http[id], c), bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := cli.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	sampler.Wait()
	t.Logf("%d callers, %v: %d writes acknowledged (%.0f/s), %d failed", callers, elapsed.Round(time.Millisecond), ok.Load(), float64(ok.Load())/elapsed.Seconds(), bad.Load())
	for _, id := range pc.ids {
		t.Logf("node %s RSS: idle %d KiB, peak under load %d KiB", id, idle[id], peak[id])
	}
	if ok.Load() == 0 || bad.Load() > ok.Load()/100 {
		t.Fatalf("load failed: %d ok, %d failed", ok.Load(), bad.Load())
	}
}
