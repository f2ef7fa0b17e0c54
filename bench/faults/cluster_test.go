//go:build faults

// Package faults is the fault suite: real `masterorder run` processes on
// loopback, every Raft link through an in-process toxiproxy proxy, a
// lunch-peak storm from the bench while boxes die, partition and lag, then
// proofs that nothing was duplicated, lost or left disagreeing.
//
//	go test -tags faults -count=1 -timeout 30m ./bench/faults/
package faults

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/pelletier/go-toml/v2"
	"github.com/rs/zerolog"

	"masterorder/api/apitest"
	"masterorder/bench/powercut"
	"masterorder/node/nodetest"
	"masterorder/raftfsm"
)

// binary is the masterorder executable built once by TestMain.
var binary string

const staffPassword = "fault-suite-pw"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "masterorder-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "masterorder")
	build := exec.Command("go", "build", "-o", binary, "../..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build masterorder:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePorts returns n distinct loopback ports that were free a moment ago,
// below the kernel's ephemeral range (nodetest.FreePort): a node restarted
// mid-schedule must find its port still free, and the proxies' outgoing
// connections take ephemeral ports.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = nodetest.FreePort(t)
	}
	return ports
}

// clusterOpts shape a test cluster.
type clusterOpts struct {
	// proxies puts a toxiproxy proxy on every directed Raft link.
	proxies bool
	// raft overrides [raft] settings (TOML keys → values).
	raft map[string]any
	// logLevel of the nodes ("" = info; "debug" also logs Raft's info
	// lines: snapshots taken, restored, installed).
	logLevel string
	// powercut puts each node's data dir on its own power-cut
	// filesystem (see powerCut).
	powercut bool
	// tmpfs puts each node's data dir on its own tmpfs of this size
	// ("64m"; root only): a card that can fill up (disk_test.go).
	tmpfs string
	// ext4 puts each node's data dir on its own loop-mounted ext4 of this
	// size ("96M"; root only) with errors=remount-ro: a card that can go
	// read-only (disk_test.go).
	ext4 string
	// disk sets [disk] (TOML keys → values).
	disk map[string]any
	// cpuPercent caps each node's process to this share of one core
	// (cpulimit_test.go: a box at a Raspberry Pi's speed; root only).
	cpuPercent int
}

// proc is one node: its config and its current process.
type proc struct {
	id       string
	cfgPath  string
	dataDir  string
	httpURL  string
	raftAddr string
	logPath  string

	// fs is the power-cut filesystem under dataDir (nil without one).
	fs *powercut.FS
	// image is the ext4 image loop-mounted on dataDir ("" without one).
	image string
	// cpu caps the node's processes (nil without clusterOpts.cpuPercent).
	cpu *cpuGroup

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *os.File
}

// link is the proxy through which node from dials node to.
type link struct {
	from, to string
	proxy    *toxiproxy.Proxy
}

type cluster struct {
	t       testing.TB
	dir     string
	ids     []string
	nodes   map[string]*proc
	links   map[[2]string]*link
	client  *http.Client
	token   string
	toxSrv  *toxiproxy.ApiServer
	startAt time.Time
}

// newCluster writes configs with `masterorder init`, starts the proxies and
// the three nodes, waits until they are ready and logs in as staff.
// Everything is stopped in t.Cleanup.
func newCluster(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, ids: []string{"a", "b", "c"}, nodes: map[string]*proc{}, links: map[[2]string]*link{},
		client: apitest.Client(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}})}
	ports := freePorts(t, 6)
	var spec []string
	for i, id := range c.ids {
		spec = append(spec, fmt.Sprintf("%s=127.0.0.1:%d:%d", id, ports[2*i], ports[2*i+1]))
	}
	cmdOut, err := exec.Command(binary, "init", "--shop-id", "f", "--nodes", strings.Join(spec, ","), "--out", dir,
		"--staff-password", staffPassword, "--plain-http").CombinedOutput()
	if err != nil {
		t.Fatalf("masterorder init: %v\n%s", err, cmdOut)
	}
	for i, id := range c.ids {
		c.nodes[id] = &proc{id: id, cfgPath: filepath.Join(dir, id+".toml"), dataDir: filepath.Join(dir, "data-"+id),
			httpURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			raftAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			logPath:  filepath.Join(dir, id+".log")}
	}
	if o.proxies {
		c.toxSrv = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
		for _, from := range c.ids {
			for _, to := range c.ids {
				if from == to {
					continue
				}
				p := toxiproxy.NewProxy(c.toxSrv, from+"->"+to, "127.0.0.1:0", c.nodes[to].raftAddr)
				if err := p.Start(); err != nil {
					t.Fatalf("proxy %s->%s: %v", from, to, err)
				}
				c.links[[2]string{from, to}] = &link{from: from, to: to, proxy: p}
			}
		}
		t.Cleanup(func() {
			for _, l := range c.links {
				l.proxy.Stop()
			}
		})
	}
	for _, id := range c.ids {
		c.editConfig(id, o)
	}
	if o.powercut {
		// Mounted before the cleanups below, so unmounted after the
		// nodes are killed.
		for _, id := range c.ids {
			p := c.nodes[id]
			p.fs = powercut.MountDirT(t, filepath.Join(dir, "backing-"+id), p.dataDir)
		}
	}
	if o.tmpfs != "" {
		for _, id := range c.ids {
			mountTmpfs(t, c.nodes[id].dataDir, o.tmpfs)
		}
	}
	if o.ext4 != "" {
		for _, id := range c.ids {
			p := c.nodes[id]
			p.image = filepath.Join(dir, "card-"+id+".img")
			mountExt4(t, p.image, p.dataDir, o.ext4)
		}
	}
	if o.cpuPercent > 0 {
		// Made before killAll is registered: removed after the kill.
		for _, id := range c.ids {
			c.nodes[id].cpu = newCPUGroup(t, fmt.Sprintf("masterorder-faults-%d-%s", os.Getpid(), id), o.cpuPercent)
		}
	}
	t.Cleanup(c.keepLogsOnFailure)
	t.Cleanup(c.killAll)
	for _, id := range c.ids {
		c.start(id)
	}
	c.waitConverged(60 * time.Second)
	c.login()
	return c
}

// editConfig adds dial_addr per peer (through this node's proxies), the
// [raft] overrides and text logs.
func (c *cluster) editConfig(id string, o clusterOpts) {
	p := c.nodes[id]
	raw, err := os.ReadFile(p.cfgPath)
	if err != nil {
		c.t.Fatal(err)
	}
	var cfg map[string]any
	if err := toml.Unmarshal(raw, &cfg); err != nil {
		c.t.Fatalf("parse %s: %v", p.cfgPath, err)
	}
	peers, _ := cfg["peers"].([]any)
	for _, pe := range peers {
		m := pe.(map[string]any)
		if l := c.links[[2]string{id, m["id"].(string)}]; l != nil {
			m["dial_addr"] = l.proxy.Listen
		}
	}
	if len(o.raft) > 0 {
		cfg["raft"] = o.raft
	}
	if len(o.disk) > 0 {
		cfg["disk"] = o.disk
	}
	cfg["log"] = map[string]any{"level": cmp.Or(o.logLevel, "info"), "format": "json"}
	out, err := toml.Marshal(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(p.cfgPath, out, 0o600); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) urls() []string {
	var u []string
	for _, id := range c.ids {
		u = append(u, c.nodes[id].httpURL)
	}
	return u
}

// start runs `masterorder run` for id in its own process group, output
// appended to the node's log file.
func (c *cluster) start(id string) {
	c.t.Helper()
	p := c.nodes[id]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			c.t.Fatalf("start %s: already running", id)
		}
	}
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(lf, "{\"fault-suite\":\"start %s at %s\"}\n", id, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binary, "run", "--config", p.cfgPath)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Own process group (killed as a group); Pdeathsig also takes it down
	// if the test binary dies without running its cleanups (-timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		c.t.Fatalf("start %s: %v", id, err)
	}
	if p.cpu != nil {
		// From its first moments on: a Pi is slow at start too.
		if err := p.cpu.add(cmd.Process.Pid); err != nil {
			c.t.Errorf("cpu quota for %s: %v", id, err)
		}
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		lf.Close()
		close(done)
	}()
	p.cmd, p.done, p.log = cmd, done, lf
}

// signal sends sig to the node's process group and, for SIGKILL and
// SIGTERM, waits until it has exited (SIGTERM escalates after 15 s).
func (c *cluster) signal(id string, sig syscall.Signal) {
	c.t.Helper()
	p := c.nodes[id]
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.t.Errorf("%s did not exit within 15 s of %v: killing it", id, sig)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (c *cluster) kill(id string) { c.signal(id, syscall.SIGKILL) }
func (c *cluster) stop(id string) { c.signal(id, syscall.SIGTERM) }

func (c *cluster) running(id string) bool {
	p := c.nodes[id]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// pid of the node's current process (0 when not running).
func (c *cluster) pid(id string) int {
	if !c.running(id) {
		return 0
	}
	p := c.nodes[id]
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// killAll SIGKILLs every node's process group (t.Cleanup).
func (c *cluster) killAll() {
	for _, id := range c.ids {
		p := c.nodes[id]
		p.mu.Lock()
		cmd, done := p.cmd, p.done
		p.mu.Unlock()
		if cmd == nil {
			continue
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
}

// stopAll SIGTERMs every node at once and waits for them.
func (c *cluster) stopAll() {
	var wg sync.WaitGroup
	for _, id := range c.ids {
		wg.Go(func() { c.stop(id) })
	}
	wg.Wait()
}

// ---- faults on links ----

// addToxic puts a toxic on both streams of the link from→to.
func (c *cluster) addToxic(from, to, name, typ string, attrs map[string]any) {
	c.t.Helper()
	l := c.links[[2]string{from, to}]
	for _, stream := range []string{"upstream", "downstream"} {
		body, _ := json.Marshal(map[string]any{"name": name + "_" + stream, "type": typ, "stream": stream, "attributes": attrs})
		if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			c.t.Fatalf("toxic %s on %s->%s: %v", name, from, to, err)
		}
	}
}

// blackhole makes the link from→to drop every byte (existing and new
// connections): a partition, not a refused connection.
func (c *cluster) blackhole(from, to string) {
	c.addToxic(from, to, "blackhole", "timeout", map[string]any{"timeout": 0})
}

// partition cuts id off from every other node, both directions.
func (c *cluster) partition(id string) {
	for _, o := range c.ids {
		if o != id {
			c.blackhole(id, o)
			c.blackhole(o, id)
		}
	}
}

// heal removes every toxic and drops every proxied connection (a stream
// that lost bytes in a black hole is not a TCP stream any more).
func (c *cluster) heal() {
	for _, l := range c.links {
		l.proxy.Toxics.ResetToxics(context.Background())
		l.proxy.Stop()
		if err := l.proxy.Start(); err != nil {
			c.t.Fatalf("restart proxy %s->%s: %v", l.from, l.to, err)
		}
	}
}

// ---- HTTP ----

type status struct {
	NodeID string `json:"nodeId"`
	State  string `json:"state"`
	Leader *struct {
		ID string `json:"id"`
	} `json:"leader"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	// Disk is the box's card, and each member's as it last reported it.
	Disk  *diskStatus `json:"disk"`
	Nodes []struct {
		ID   string      `json:"id"`
		Disk *diskStatus `json:"disk"`
	} `json:"nodes"`
}

type diskStatus struct {
	State      string `json:"state"`
	FreeBytes  uint64 `json:"freeBytes"`
	TotalBytes uint64 `json:"totalBytes"`
}

func (c *cluster) get(id, path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, c.nodes[id].httpURL+path, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s on %s: %d %s", path, id, resp.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

func (c *cluster) status(id string) (status, error) {
	var s status
	err := c.get(id, "/api/cluster/status", &s)
	return s, err
}

func (c *cluster) ready(id string) bool {
	resp, err := c.client.Get(c.nodes[id].httpURL + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// leader is the id of the node that every running node names as leader
// and that calls itself leader ("" if there is none right now).
func (c *cluster) leader() string {
	for _, id := range c.ids {
		if !c.running(id) {
			continue
		}
		if s, err := c.status(id); err == nil && s.State == "leader" {
			return id
		}
	}
	return ""
}

func (c *cluster) waitLeader(timeout time.Duration) string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.leader(); l != "" {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %s", timeout)
	return ""
}

func (c *cluster) followers(leader string) []string {
	var f []string
	for _, id := range c.ids {
		if id != leader {
			f = append(f, id)
		}
	}
	return f
}

// waitReady waits until id answers /readyz 200.
func (c *cluster) waitReady(id string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c.ready(id) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%s not ready within %s; log tail:\n%s", id, timeout, c.logTail(id, 20))
}

// waitConverged waits until every node is ready, agrees on one leader and
// has applied the same index, equal to the commit index, and returns it.
func (c *cluster) waitConverged(timeout time.Duration) uint64 {
	c.t.Helper()
	idx, err := c.converged(timeout)
	if err != nil {
		c.t.Fatalf("cluster did not converge within %s: %v", timeout, err)
	}
	return idx
}

func (c *cluster) converged(timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		idx, err := c.convergedNow()
		if err == nil {
			return idx, nil
		}
		last = err
		if time.Now().After(deadline) {
			return 0, last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) convergedNow() (uint64, error) {
	var idx uint64
	leader := ""
	for i, id := range c.ids {
		if !c.ready(id) {
			return 0, fmt.Errorf("%s not ready", id)
		}
		s, err := c.status(id)
		if err != nil {
			return 0, err
		}
		if s.Leader == nil {
			return 0, fmt.Errorf("%s knows no leader", id)
		}
		if i == 0 {
			idx, leader = s.AppliedIndex, s.Leader.ID
		}
		if s.Leader.ID != leader || s.AppliedIndex != idx || s.CommitIndex != idx {
			return 0, fmt.Errorf("%s: leader %s applied %d commit %d; %s: leader %s applied %d", id, s.Leader.ID, s.AppliedIndex, s.CommitIndex, c.ids[0], leader, idx)
		}
	}
	return idx, nil
}

func (c *cluster) login() {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"password": staffPassword})
	var last error
	for range 20 {
		for _, id := range c.ids {
			resp, err := c.client.Post(c.nodes[id].httpURL+"/api/staff/login", "application/json", bytes.NewReader(body))
			if err != nil {
				last = err
				continue
			}
			var out struct {
				Token string `json:"token"`
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &out) == nil && out.Token != "" {
				c.token = out.Token
				return
			}
			last = fmt.Errorf("login on %s: %d %s", id, resp.StatusCode, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.t.Fatalf("staff login: %v", last)
}

// keepLogsOnFailure copies the nodes' logs out of the test's temp dir
// when the test failed (t.Cleanup, after the nodes are killed).
func (c *cluster) keepLogsOnFailure() {
	if !c.t.Failed() {
		return
	}
	dir := filepath.Join(os.TempDir(), "masterorder-faults-logs", strings.ReplaceAll(c.t.Name(), "/", "_")+"-"+time.Now().Format("150405"))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return
	}
	for _, id := range c.ids {
		if b, err := os.ReadFile(c.nodes[id].logPath); err == nil {
			os.WriteFile(filepath.Join(dir, id+".log"), b, 0o600)
		}
	}
	c.t.Logf("node logs kept in %s", dir)
}

// logTail is the last n lines of the node's log.
func (c *cluster) logTail(id string, n int) string {
	b, _ := os.ReadFile(c.nodes[id].logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logCount counts the log lines of id containing s.
func (c *cluster) logCount(id, s string) int {
	b, _ := os.ReadFile(c.nodes[id].logPath)
	return strings.Count(string(b), s)
}

// rssKB is VmRSS of the node's process in KiB (0 when not running).
func (c *cluster) rssKB(id string) int {
	pid := c.pid(id)
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb
		}
	}
	return 0
}

// ---- state dumps ----

// filesDir is where this process reads a stopped node's data dir: the
// backing dir of a power-cut filesystem (this process serves the mount;
// it must not page-fault on it), else the data dir.
func (p *proc) filesDir() string {
	if p.fs != nil {
		return p.fs.Backing()
	}
	return p.dataDir
}

// dump opens a stopped node's FSM files and returns their deterministic
// dump and its applied index.
func dumpFSM(dataDir string) ([]byte, error) {
	f, err := raftfsm.Open(raftfsm.Options{Dir: filepath.Join(dataDir, "fsm")})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if err := f.Dump(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compareDumps stops the converged cluster (all nodes at once, right after
// every node reported the same applied index) and checks that the three
// FSM dumps are byte-identical. A command that commits between the check
// and the stop (a key expiring) makes the indexes differ: then the nodes
// are restarted and it tries again. The nodes are left stopped.
func (c *cluster) compareDumps() {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		if _, err := c.converged(60 * time.Second); err != nil {
			c.t.Fatalf("before dump: %v", err)
		}
		// Tight loop: stop the moment all agree.
		for range 200 {
			if _, err := c.convergedNow(); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.stopAll()
		dumps := map[string][]byte{}
		for _, id := range c.ids {
			d, err := dumpFSM(c.nodes[id].filesDir())
			if err != nil {
				c.t.Fatalf("dump %s: %v", id, err)
			}
			dumps[id] = d
		}
		first := c.ids[0]
		same := true
		for _, id := range c.ids[1:] {
			if !bytes.Equal(dumps[id], dumps[first]) {
				same = false
			}
		}
		if same {
			c.t.Logf("state dumps identical on %v (%d bytes, sha256 %x)", c.ids, len(dumps[first]), sha256.Sum256(dumps[first]))
			return
		}
		applied := map[string]string{}
		for _, id := range c.ids {
			applied[id] = appliedLine(dumps[id])
		}
		allSameIndex := applied["a"] == applied["b"] && applied["b"] == applied["c"]
		if allSameIndex || attempt >= 4 {
			for _, id := range c.ids[1:] {
				if !bytes.Equal(dumps[id], dumps[first]) {
					c.t.Errorf("state dump of %s differs from %s (applied %s vs %s): first difference:\n%s", id, first, applied[id], applied[first], firstDiff(dumps[first], dumps[id]))
				}
			}
			return
		}
		c.t.Logf("dump attempt %d: applied indexes differ (%v): a command committed while stopping; restarting", attempt, applied)
		for _, id := range c.ids {
			c.start(id)
		}
	}
}

// appliedLine finds the applied index entry in a dump's bolt meta bucket.
func appliedLine(d []byte) string {
	for _, line := range strings.Split(string(d), "\n") {
		if strings.Contains(line, `"applied"=`) {
			return strings.TrimSpace(line)
		}
	}
	return "?"
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			trunc := func(s string) string {
				if len(s) > 300 {
					return s[:300] + "…"
				}
				return s
			}
			return fmt.Sprintf("line %d:\n  - %s\n  + %s", i+1, trunc(x), trunc(y))
		}
	}
	return "(none)"
}
