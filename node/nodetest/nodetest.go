// Package nodetest starts in-process clusters on loopback for tests.
package nodetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/pki"
)

// FreePort returns a loopback port that was free a moment ago. It picks
// below the kernel's ephemeral range, so the outgoing connections of a busy
// test (which take ephemeral ports) cannot grab it before a node binds it,
// and never hands out the same port twice in one process.
func FreePort(t testing.TB) int {
	t.Helper()
	lo := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	if lo > 12000 {
		for try := 0; try < 200; try++ {
			p := 10000 + rand.IntN(lo-10000)
			if portsGiven[p] {
				continue
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				continue
			}
			l.Close()
			portsGiven[p] = true
			return p
		}
	}
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven[p] {
			portsGiven[p] = true
			return p
		}
	}
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (Linux),
// or 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// Configs builds n node configs on free loopback ports under dir.
func Configs(t testing.TB, n int, dir string) []node.Config {
	var peers []node.Peer
	for i := 0; i < n; i++ {
		id := string(rune('a' + i))
		peers = append(peers, node.Peer{ID: id,
			RaftAddr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", FreePort(t))})
	}
	// Nodes only run with mutual TLS on the raft port, as init sets up.
	tlsDir := filepath.Join(dir, "tls")
	ca, err := pki.NewCA("MasterOrder test", 0)
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	if err := ca.WriteFiles(tlsDir); err != nil {
		t.Fatalf("test CA: %v", err)
	}
	var cfgs []node.Config
	for _, p := range peers {
		cert, key, err := ca.IssueNode(p.ID, []string{"127.0.0.1"}, 0)
		if err != nil {
			t.Fatalf("test certificate: %v", err)
		}
		if err := pki.WriteNodeFiles(tlsDir, p.ID, cert, key); err != nil {
			t.Fatalf("test certificate: %v", err)
		}
		c := node.Defaults()
		c.TLS = node.TLSConfig{CAFile: pki.CAFile(tlsDir), CertFile: pki.NodeCertFile(tlsDir, p.ID), KeyFile: pki.NodeKeyFile(tlsDir, p.ID)}
		c.NodeID, c.ShopID = p.ID, "testshop"
		c.DataDir = filepath.Join(dir, "data-"+p.ID)
		c.HTTPAddr, c.RaftAddr = p.HTTPAddr, p.RaftAddr
		c.ClusterSecret = "test-cluster-secret-0123456789"
		// Tests talk to staff endpoints over plain HTTP, as the demo does;
		// HTTPS tests turn this off and set https_addr.
		c.HTTP.AllowPlainStaff = true
		// Test machines are busy (race detector, parallel packages, two
		// cores): LAN timeouts would make leadership flap. Tests that
		// measure failover set their own.
		c.Raft.HeartbeatTimeout.Duration = time.Second
		c.Raft.ElectionTimeout.Duration = time.Second
		c.Raft.LeaderLeaseTimeout.Duration = 500 * time.Millisecond
		c.Peers = append([]node.Peer(nil), peers...)
		cfgs = append(cfgs, c)
	}
	return cfgs
}

// PatientRaft gives a node Raft timeouts that outlast a starved CPU: a
// test under -race beside a CPU-heavy process, or driving its own
// cluster hard, can keep a leader from its followers for longer than
// Configs' second, and the election that follows answers writes 503
// NO_QUORUM. It is for tests that judge answers ("never a 5xx"), not
// failover (pass it to Start as mutate); the first election takes up to
// twice HeartbeatTimeout.
func PatientRaft(_ int, c *node.Config) {
	c.Raft.HeartbeatTimeout.Duration = 3 * time.Second
	c.Raft.ElectionTimeout.Duration = 3 * time.Second
	c.Raft.LeaderLeaseTimeout.Duration = 2 * time.Second
}

// Cluster is a set of nodes in this process.
type Cluster struct {
	T       testing.TB
	Configs []node.Config
	Nodes   []*node.Node // nil while a node is stopped
	// Options builds node i's options (domain registration, clocks).
	Options func(i int) node.Options
	// Setup runs on each node after New and before Start (routes, workers).
	Setup func(i int, n *node.Node)
}

// Logger is quiet unless MO_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("MO_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// Start starts n nodes and waits for a ready leader; they are stopped
// when the test ends.
func Start(t testing.TB, n int, mutate func(i int, c *node.Config), options func(i int) node.Options, setup func(i int, n *node.Node)) *Cluster {
	t.Helper()
	c := &Cluster{T: t, Options: options, Setup: setup}
	// The directory first: cleanups run last-registered first, so the
	// nodes stop before their files are removed.
	base := t.TempDir()
	t.Cleanup(c.StopAll)
	// A port that was free when picked can be taken before a node binds it
	// (test binaries and fault-suite processes pick ports side by side): a
	// first start that loses that race starts over on fresh ports.
	for attempt := 1; ; attempt++ {
		dir := filepath.Join(base, fmt.Sprintf("start%d", attempt))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.Configs = Configs(t, n, dir)
		if mutate != nil {
			for i := range c.Configs {
				mutate(i, &c.Configs[i])
			}
		}
		c.Nodes = make([]*node.Node, n)
		var err error
		for i := range c.Configs {
			if _, err = c.startNode(i); err != nil {
				break
			}
		}
		if err == nil {
			break
		}
		c.StopAll()
		if !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("%v; starting over on fresh ports", err)
	}
	// The first election takes up to twice the heartbeat timeout.
	c.WaitLeader(max(10*time.Second, 4*c.Configs[0].Raft.HeartbeatTimeout.Duration))
	return c
}

// StartNode (re)starts node i from its files.
func (c *Cluster) StartNode(i int) *node.Node {
	c.T.Helper()
	nd, err := c.startNode(i)
	if err != nil {
		c.T.Fatal(err)
	}
	return nd
}

func (c *Cluster) startNode(i int) (*node.Node, error) {
	opts := node.Options{}
	if c.Options != nil {
		opts = c.Options(i)
	}
	if opts.Logger == nil {
		opts.Logger = Logger()
	}
	if opts.ClockSynced == nil {
		// A box's clock is NTP-synced unless the test says otherwise
		// (the clock tests do): the machine running the tests may have
		// no NTP, and no other test is about the clock.
		opts.ClockSynced = func() bool { return true }
	}
	nd, err := node.New(c.Configs[i], opts)
	if err != nil {
		return nil, fmt.Errorf("new node %d: %w", i, err)
	}
	if c.Setup != nil {
		c.Setup(i, nd)
	}
	if err := nd.Start(); err != nil { // Start stops the node itself
		return nil, fmt.Errorf("start node %d: %w", i, err)
	}
	c.Nodes[i] = nd
	return nd, nil
}

// StopNode stops node i (its files stay).
func (c *Cluster) StopNode(i int) {
	if c.Nodes[i] != nil {
		c.Nodes[i].Stop()
		c.Nodes[i] = nil
	}
}

// RestartTimed stops node i, starts it again from its files and returns
// how long it took from the start until its /readyz answered 200 (a
// figure to log, never to assert on); past a minute the test fails.
func (c *Cluster) RestartTimed(i int) time.Duration {
	c.T.Helper()
	c.StopNode(i)
	t0 := time.Now()
	c.StartNode(i)
	url := "http://" + c.Configs[i].HTTPAddr + "/readyz"
	for time.Since(t0) < 60*time.Second {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(t0)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.T.Fatalf("node %d not ready within 60 s", i)
	return 0
}

// StopAll stops every running node.
func (c *Cluster) StopAll() {
	for i := range c.Nodes {
		c.StopNode(i)
	}
}

// Leader waits for a ready leader among the running nodes.
func (c *Cluster) WaitLeader(timeout time.Duration) (int, *node.Node) {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, n := range c.Nodes {
			if n != nil && n.IsLeader() {
				return i, n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.T.Fatalf("no leader within %v", timeout)
	return -1, nil
}

// Follower returns a running node that is not the leader.
func (c *Cluster) Follower() (int, *node.Node) {
	c.T.Helper()
	li, _ := c.WaitLeader(10 * time.Second)
	for i, n := range c.Nodes {
		if n != nil && i != li {
			return i, n
		}
	}
	c.T.Fatal("no follower running")
	return -1, nil
}

// WaitConverged waits until every running node applied the leader's
// commit index, then returns the nodes' deterministic dumps.
func (c *Cluster) WaitConverged(timeout time.Duration) [][]byte {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A no-op write makes every earlier entry committed in this term. It is
	// retried across leader changes (deleting twice is harmless); the
	// target is what the leader applied after it (an index the FSM sees,
	// unlike Raft's no-op and barrier entries).
	var target uint64
	for {
		_, leader := c.WaitLeader(timeout)
		_, err := leader.KV().Delete(ctx, "nodetest:barrier")
		if err == nil {
			target = leader.FSM().Handled()
			break
		}
		if ctx.Err() != nil {
			c.T.Fatalf("barrier write: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var dumps [][]byte
	for i, n := range c.Nodes {
		if n == nil {
			continue
		}
		if err := n.FSM().WaitApplied(ctx, target); err != nil {
			c.T.Fatalf("node %d did not catch up to %d: %v", i, target, err)
		}
	}
	// Nodes may have applied past target by now; dump at a quiet moment.
	for i, n := range c.Nodes {
		if n == nil {
			continue
		}
		var b bytes.Buffer
		if err := n.FSM().Dump(&b); err != nil {
			c.T.Fatalf("dump node %d: %v", i, err)
		}
		dumps = append(dumps, b.Bytes())
	}
	return dumps
}

// AssertIdentical checks that every running node's dump is the same.
func (c *Cluster) AssertIdentical(timeout time.Duration) {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dumps := c.WaitConverged(timeout)
		same := true
		for _, d := range dumps[1:] {
			if !bytes.Equal(d, dumps[0]) {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("node dumps differ:\n%s", firstDiff(dumps))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func firstDiff(dumps [][]byte) string {
	a := bytes.Split(dumps[0], []byte("\n"))
	for k, d := range dumps[1:] {
		b := bytes.Split(d, []byte("\n"))
		for i := 0; i < len(a) && i < len(b); i++ {
			if !bytes.Equal(a[i], b[i]) {
				return fmt.Sprintf("node0 vs node%d at line %d:\n  %q\n  %q", k+1, i, a[i], b[i])
			}
		}
		if len(a) != len(b) {
			return fmt.Sprintf("node0 has %d lines, node%d has %d", len(a), k+1, len(b))
		}
	}
	return "(no line differs)"
}
