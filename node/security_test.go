package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/kv"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/pki"
	"masterorder/raftfsm"
)

// Guests' phones share the store Wi-Fi and reach every port. These tests
// attack the Raft port of a mutual-TLS cluster (it also carries the
// internal HTTP channel: /internal/apply, /internal/readindex) the way a
// phone could, and check that nothing answers and nothing breaks.

// secLogRecorder is a slog handler that keeps every message (tests look for
// the "refused a connection" warnings).
type secLogRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *secLogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *secLogRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *secLogRecorder) WithGroup(string) slog.Handler            { return r }
func (r *secLogRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *secLogRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// secCA writes a CA and certificates for ids into dir.
func secCA(t *testing.T, dir, name string, ids ...string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		cert, key, err := ca.IssueNode(id, []string{"127.0.0.1"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteNodeFiles(dir, id, cert, key); err != nil {
			t.Fatal(err)
		}
	}
	return ca
}

func secTLSFiles(dir, id string) node.TLSConfig {
	return node.TLSConfig{CAFile: pki.CAFile(dir), CertFile: pki.NodeCertFile(dir, id), KeyFile: pki.NodeKeyFile(dir, id)}
}

// secStartTLS starts 3 nodes with mutual TLS on the Raft port; every
// node logs into rec.
func secStartTLS(t *testing.T, rec *secLogRecorder) (*nodetest.Cluster, string) {
	t.Helper()
	dir := t.TempDir()
	secCA(t, dir, "store cluster", "a", "b", "c")
	c := nodetest.Start(t, 3, func(_ int, c *node.Config) {
		c.TLS = secTLSFiles(dir, c.NodeID)
	}, func(int) node.Options {
		return node.Options{Logger: slog.New(rec)}
	}, nil)
	return c, dir
}

// secForgedApply is what a phone would send to /internal/apply if it could:
// a KV put of "pwned", with the real cluster secret in the header.
func secForgedApply(secret string) []byte {
	payload := []byte(`{"op":"put","key":"pwned","value":"eA=="}`)
	body := append([]byte{byte(kv.CmdOp), 1, 0}, payload...)
	return []byte(fmt.Sprintf("POST /internal/apply HTTP/1.1\r\nHost: x\r\nX-MasterOrder-Cluster-Secret: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s",
		secret, len(body), body))
}

func secReadIndexRequest(secret string) []byte {
	return []byte("GET /internal/readindex HTTP/1.1\r\nHost: x\r\nX-MasterOrder-Cluster-Secret: " + secret + "\r\n\r\n")
}

// secRaftGarbage looks like the start of a Raft RPC (rpc type byte, then a
// msgpack map) to a listener that skipped TLS.
var secRaftGarbage = []byte{0x00, 0x84, 0xa4, 'T', 'e', 'r', 'm', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}

// secExpectNothing reads what the server sends back on conn after the
// client's bytes went out: it must close the connection within a bound and
// never answer with HTTP or with anything but (at most) a TLS alert.
func secExpectNothing(t *testing.T, what string, conn net.Conn, plain bool) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(8 * time.Second))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: connection still open after 8s (read %d bytes)", what, len(got))
	}
	if bytes.Contains(got, []byte("HTTP/")) {
		t.Errorf("%s: got an HTTP answer: %q", what, got)
	}
	// Over raw TCP the only thing a TLS server may send is an alert record
	// (content type 21); a tls.Conn surfaces alerts as errors, not bytes.
	if len(got) > 0 && (!plain || got[0] != 21) {
		t.Errorf("%s: server sent %d bytes: %q", what, len(got), got)
	}
}

func TestRaftPortRefusesStrangers(t *testing.T) {
	rec := &secLogRecorder{}
	c, _ := secStartTLS(t, rec)
	li, leader := c.WaitLeader(10 * time.Second)
	term := leader.Raft().CurrentTerm()
	secret := c.Configs[0].ClusterSecret

	// Certificates a phone could hold: none, or one from its own CA (even
	// one naming a real node id).
	foreignDir := t.TempDir()
	secCA(t, foreignDir, "store cluster", "a")
	foreign, err := tls.LoadX509KeyPair(pki.NodeCertFile(foreignDir, "a"), pki.NodeKeyFile(foreignDir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*tls.Config{
		"tls without a certificate":         {InsecureSkipVerify: true},
		"tls with another CA's certificate": {InsecureSkipVerify: true, Certificates: []tls.Certificate{foreign}},
	}

	refusedBefore := rec.count("refused a connection on the raft port")
	attempts := 0
	for i, cfg := range c.Configs {
		addr := cfg.RaftAddr
		role := "follower"
		if i == li {
			role = "leader"
		}
		// Raw TCP: an HTTP request with the real secret, a Raft-looking
		// RPC, and a connection that just sits there.
		payloads := map[string][]byte{
			"plain http apply":     secForgedApply(secret),
			"plain http readindex": secReadIndexRequest(secret),
			"raft rpc bytes":       secRaftGarbage,
		}
		if i == li {
			payloads["silence"] = nil // closed at the handshake timeout (5 s)
		}
		for name, payload := range payloads {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", addr, err)
			}
			if payload != nil {
				conn.Write(payload)
			}
			secExpectNothing(t, fmt.Sprintf("%s %s: %s", role, cfg.NodeID, name), conn, true)
			conn.Close()
			attempts++
		}
		// net/http's own client, as a script would use it.
		hc := &http.Client{Timeout: 8 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		req, _ := http.NewRequest("POST", "http://"+addr+"/internal/apply", strings.NewReader("\x01\x01\x00{}"))
		req.Header.Set("X-MasterOrder-Cluster-Secret", secret)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s %s: plain HTTP /internal/apply answered %d", role, cfg.NodeID, resp.StatusCode)
		}
		attempts++

		// TLS clients without a cluster certificate, offering each ALPN.
		for name, base := range clients {
			for _, proto := range []string{"http/1.1", "masterorder-raft/1"} {
				tc := base.Clone()
				tc.NextProtos = []string{proto}
				d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: tc}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				conn, err := d.DialContext(ctx, "tcp", addr)
				cancel()
				attempts++
				if err != nil {
					continue // refused during the handshake: nothing answered
				}
				// TLS 1.3: the client finishes first; the server's verdict
				// arrives as an alert on the first read.
				if proto == "http/1.1" {
					conn.Write(secForgedApply(secret))
					conn.Write(secReadIndexRequest(secret))
				} else {
					conn.Write(secRaftGarbage)
				}
				secExpectNothing(t, fmt.Sprintf("%s %s: %s (%s)", role, cfg.NodeID, name, proto), conn, false)
				conn.Close()
			}
		}
		// The internal client of a real node would succeed here; a
		// stranger's HTTPS client gets no response at all.
		for name, base := range clients {
			tc := base.Clone()
			tc.NextProtos = []string{"http/1.1"}
			hc := &http.Client{Timeout: 8 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: tc, DisableKeepAlives: true}}
			for _, path := range []string{"/internal/apply", "/internal/readindex"} {
				method := "GET"
				if path == "/internal/apply" {
					method = "POST"
				}
				req, _ := http.NewRequest(method, "https://"+addr+path, strings.NewReader("\x01\x01\x00{}"))
				req.Header.Set("X-MasterOrder-Cluster-Secret", secret)
				if resp, err := hc.Do(req); err == nil {
					resp.Body.Close()
					t.Errorf("%s %s: %s %s answered %d", role, cfg.NodeID, name, path, resp.StatusCode)
				}
				attempts++
			}
		}
	}

	// Every stranger was refused by the listener (and logged), the
	// cluster kept its leader and term, and writes still go through.
	waitFor(t, "refusals logged", 5*time.Second, func() bool {
		return rec.count("refused a connection on the raft port")-refusedBefore >= attempts/2
	})
	_, f := c.Follower()
	secPut(t, f, "after-attack")
	secPut(t, leader, "after-attack-2")
	c.AssertIdentical(10 * time.Second)
	for i, n := range c.Nodes {
		if err := n.FSM().Halted(); err != nil {
			t.Errorf("node %d halted: %v", i, err)
		}
		if _, ok, _ := n.KV().Get("pwned"); ok {
			t.Errorf("node %d applied a command sent by a stranger", i)
		}
		if _, ok, _ := n.KV().Get("after-attack"); !ok {
			t.Errorf("node %d misses the write made after the attack", i)
		}
	}
	// Elections on a loaded test machine (race detector, 300 ms timeouts)
	// are no proof either way; what counts is above: nothing answered,
	// nothing applied, every node serving, writes committing.
	if li2, l2 := c.WaitLeader(5 * time.Second); li2 != li || l2.Raft().CurrentTerm() != term {
		t.Logf("leadership moved during the test: leader %d term %d, was %d term %d", li2, l2.Raft().CurrentTerm(), li, term)
	}
}

// A box with a certificate from another CA (someone's own "cluster")
// cannot join: its votes and its RPCs are refused, and when staff add it
// as a member it never receives an entry.
func TestNodeFromAnotherCACannotJoin(t *testing.T) {
	rec := &secLogRecorder{}
	c, _ := secStartTLS(t, rec)
	li, leader := c.WaitLeader(10 * time.Second)
	term := leader.Raft().CurrentTerm()
	secPut(t, leader, "before-rogue")

	rogueDir := t.TempDir()
	secCA(t, rogueDir, "store cluster", "rogue")
	cfg := c.Configs[0]
	cfg.NodeID = "rogue"
	cfg.DataDir = filepath.Join(t.TempDir(), "data-rogue")
	cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	cfg.RaftAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	cfg.TLS = secTLSFiles(rogueDir, "rogue")
	cfg.Peers = append(append([]node.Peer(nil), c.Configs[0].Peers...), node.Peer{ID: "rogue", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr})
	rogueRec := &secLogRecorder{}
	rogue, err := node.New(cfg, node.Options{Logger: slog.New(rogueRec)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rogue.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rogue.Stop)

	// It bootstrapped a configuration naming the real nodes and campaigns
	// against them; staff (or a bug) also add it as a non-voter.
	secOnLeader(t, c, "add the rogue as a non-voter", func(r *raft.Raft) error {
		return r.AddNonvoter("rogue", raft.ServerAddress(cfg.RaftAddr), 0, 5*time.Second).Error()
	})
	for i := 0; i < 10; i++ {
		secPut(t, c.Nodes[i%3], fmt.Sprintf("while-rogue-%d", i))
	}
	time.Sleep(2 * time.Second) // many of the rogue's election timeouts

	if n := rogue.FSM().Applied(); n != 0 {
		t.Errorf("rogue applied up to index %d", n)
	}
	if _, ok, _ := rogue.KV().Get("before-rogue"); ok {
		t.Error("rogue received cluster data")
	}
	if id, _ := rogue.LeaderID(); id != "" {
		t.Errorf("rogue knows leader %q", id)
	}
	if !rogue.Raft().LastContact().IsZero() {
		t.Errorf("rogue heard from a leader at %v", rogue.Raft().LastContact())
	}
	if n := rec.count("refused a connection on the raft port"); n == 0 {
		t.Error("the cluster logged no refused connection from the rogue")
	}
	if n := rogueRec.count("refused a connection on the raft port"); n == 0 {
		t.Error("the rogue logged no refused connection from the leader's replication")
	}
	if li2, l2 := c.WaitLeader(5 * time.Second); li2 != li || l2.Raft().CurrentTerm() != term {
		t.Logf("leadership moved during the test: leader %d term %d, was %d term %d", li2, l2.Raft().CurrentTerm(), li, term)
	}
	// The rogue is in the configuration but can never catch up.
	secOnLeader(t, c, "remove the rogue", func(r *raft.Raft) error {
		return r.RemoveServer("rogue", 0, 5*time.Second).Error()
	})
	_, f := c.Follower()
	secPut(t, f, "after-rogue")
	c.AssertIdentical(10 * time.Second)
	for i, n := range c.Nodes {
		if err := n.FSM().Halted(); err != nil {
			t.Errorf("node %d halted: %v", i, err)
		}
	}
}

// secMemberClient speaks to the internal channel with node i's own cluster
// certificate, as a member (or someone holding a member's files) would.
func secMemberClient(t *testing.T, c *nodetest.Cluster, i int, timeout time.Duration) *http.Client {
	t.Helper()
	f := c.Configs[i].TLS
	_, cli, err := pki.LoadMutualTLS(f.CAFile, f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cli.NextProtos = []string{"http/1.1"}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, TLSClientConfig: cli}}
}

// Even a holder of a cluster certificate needs the cluster secret on the
// internal channel.
func TestInternalChannelNeedsSecret(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	li, _ := c.WaitLeader(10 * time.Second)
	addr := c.Configs[li].RaftAddr
	hc := secMemberClient(t, c, (li+1)%3, 5*time.Second)
	for _, secret := range []string{"", "wrong-secret-0123456789", c.Configs[li].ClusterSecret + "x"} {
		for _, path := range []string{"/internal/apply", "/internal/readindex", "/internal/snapshot"} {
			method := "GET"
			if path == "/internal/apply" {
				method = "POST"
			}
			body := append([]byte{byte(kv.CmdOp), 1, 0}, `{"op":"put","key":"pwned"}`...)
			req, _ := http.NewRequest(method, "https://"+addr+path, bytes.NewReader(body))
			if secret != "" {
				req.Header.Set("X-MasterOrder-Cluster-Secret", secret)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			b, _ := io.ReadAll(bufio.NewReader(io.LimitReader(resp.Body, 1<<20)))
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s with secret %q: %d %q", path, secret, resp.StatusCode, b)
			}
			if len(b) > 64 {
				t.Errorf("%s: %d bytes leaked to a caller without the secret", path, len(b))
			}
		}
	}
	for i, n := range c.Nodes {
		if _, ok, _ := n.KV().Get("pwned"); ok {
			t.Errorf("node %d applied a command without the secret", i)
		}
	}
}

// A corrupt or unknown entry forwarded by a real member must not stop the
// leader from serving: malformed envelopes are answered, not applied.
func TestForwardedGarbageIsAnswered(t *testing.T) {
	c := nodetest.Start(t, 3, nodetest.PatientRaft, nil, nil)
	li, leader := c.WaitLeader(10 * time.Second)
	addr := c.Configs[li].RaftAddr
	hc := secMemberClient(t, c, (li+1)%3, 10*time.Second)
	bodies := [][]byte{
		{},
		{1},
		{byte(kv.CmdOp), 1},
		append([]byte{byte(kv.CmdOp), 1, 0}, "not json"...),
		append([]byte{byte(kv.CmdOp), 1, 0}, `{"op":"put","key":""}`...),
		append([]byte{byte(kv.CmdOp), 1, 0}, `{"op":"put","key":"`+strings.Repeat("k", 600)+`"}`...),
		append([]byte{byte(kv.CmdOp), 1, 0}, `{"op":"txn","ops":[{"key":""}]}`...),
		append([]byte{byte(kv.CmdExpire), 1, 0}, `{"limit":-5}`...),
		append([]byte{200, 1, byte(raftfsm.FlagIgnorable)}, "future"...),
	}
	for _, b := range bodies {
		req, _ := http.NewRequest("POST", "https://"+addr+"/internal/apply", bytes.NewReader(b))
		req.Header.Set("X-MasterOrder-Cluster-Secret", c.Configs[li].ClusterSecret)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%q: status %d", b, resp.StatusCode)
		}
	}
	secPut(t, leader, "still-fine")
	c.AssertIdentical(10 * time.Second)
	for i, n := range c.Nodes {
		if err := n.FSM().Halted(); err != nil {
			t.Errorf("node %d halted: %v", i, err)
		}
	}
}

// secOnLeader runs a membership change on whichever node leads now,
// retrying while leadership moves (a loaded test machine elects often).
func secOnLeader(t *testing.T, c *nodetest.Cluster, what string, fn func(r *raft.Raft) error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, l := c.WaitLeader(10 * time.Second)
		err := fn(l.Raft())
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !(errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrEnqueueTimeout)) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// secPut writes key through n, retrying while leadership moves (a put is
// safe to repeat).
func secPut(t *testing.T, n *node.Node, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.KV().Put(ctx, key, []byte("x"), 0)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !(errors.Is(err, node.ErrUnknownOutcome) || errors.Is(err, node.ErrNoQuorum)) {
			t.Fatalf("put %s: %v", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type secSyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *secSyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *secSyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Strangers decide how often the Raft port refuses them, and some of what
// they send (ALPN names, TLS versions) ends up in the refusal's error text:
// the log stays one record per line, and the refusals are rate-limited so
// a phone cannot fill the SD card.
func TestRaftPortRefusalLogsStayBoundedAndOneLine(t *testing.T) {
	dir := t.TempDir()
	secCA(t, dir, "store cluster", "a", "b", "c")
	buf := &secSyncBuffer{}
	c := nodetest.Start(t, 3, func(_ int, c *node.Config) {
		c.TLS = secTLSFiles(dir, c.NodeID)
	}, func(int) node.Options {
		return node.Options{Logger: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	}, nil)
	addr := c.Configs[0].RaftAddr
	forged := "x\ntime=2026-01-01T00:00:00Z level=ERROR msg=forged node=a"
	for i := 0; i < 100; i++ {
		tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{forged, "http/1.1\r\nX: y"}}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: tc}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if conn, err := d.DialContext(ctx, "tcp", addr); err == nil {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			io.ReadAll(conn)
			conn.Close()
		}
		cancel()
	}
	waitFor(t, "refusals logged", 5*time.Second, func() bool {
		return strings.Count(buf.String(), "refused a connection") >= 20
	})
	time.Sleep(500 * time.Millisecond) // the last handshakes finish
	out := buf.String()
	refused := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("log line not written by the handler (injected?): %q", line)
		}
		if strings.Contains(line, "refused a connection") && strings.Contains(line, "node=a") {
			refused++
		}
		if strings.HasPrefix(line, "time=2026-01-01") {
			t.Errorf("forged log line: %q", line)
		}
	}
	if refused > 20 {
		t.Errorf("%d refusal lines for 100 connections within a minute; want at most 20", refused)
	}
	if refused == 0 {
		t.Errorf("no refusal logged:\n%s", out)
	}
}

// A box is removed (stolen, or dead and replaced): whoever holds its files
// — cluster CA certificate, node certificate and key, cluster secret —
// is refused on the Raft port and the internal channel of every remaining
// member from the moment the removal commits, its certificate's serial is
// on the replicated deny-list, and the cluster keeps committing.
func TestRemovedMemberIsShutOut(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	li, leader := c.WaitLeader(10 * time.Second)
	v := (li + 1) % 3
	victim := c.Configs[v]
	hc := secMemberClient(t, c, v, 5*time.Second)
	hc.Transport.(*http.Transport).DisableKeepAlives = true
	readIndex := func(i int) (int, error) {
		req, _ := http.NewRequest("GET", "https://"+c.Configs[i].RaftAddr+"/internal/readindex", nil)
		req.Header.Set("X-MasterOrder-Cluster-Secret", victim.ClusterSecret)
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		res.Body.Close()
		return res.StatusCode, nil
	}
	// Control: while a member, its certificate opens the internal channel.
	if code, err := readIndex(li); err != nil || code != 200 {
		t.Fatalf("member's readindex: %d %v", code, err)
	}
	c.StopNode(v)
	secOnLeader(t, c, "remove "+victim.NodeID, func(*raft.Raft) error {
		_, l := c.WaitLeader(10 * time.Second)
		return l.RemoveMember(context.Background(), victim.NodeID)
	})
	_, leader = c.WaitLeader(10 * time.Second)
	waitFor(t, "deny-list entry on every member", 10*time.Second, func() bool {
		for i, n := range c.Nodes {
			if n == nil || i == v {
				continue
			}
			if l, err := n.KV().List("denycert:", 10); err != nil || len(l) == 0 {
				return false
			}
		}
		return true
	})
	_, cli, err := pki.LoadMutualTLS(victim.TLS.CAFile, victim.TLS.CertFile, victim.TLS.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Configs {
		if i == v {
			continue
		}
		waitFor(t, "removed member refused by "+c.Configs[i].NodeID, 10*time.Second, func() bool {
			_, err := readIndex(i)
			return err != nil
		})
		// The Raft side: the handshake (or the first read) fails.
		rc := cli.Clone()
		rc.NextProtos = []string{"masterorder-raft/1"}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", c.Configs[i].RaftAddr, rc)
		if err == nil {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			conn.Write(secRaftGarbage)
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Errorf("node %s answered the removed member on the raft port", c.Configs[i].NodeID)
		}
	}
	secPut(t, leader, "after-removal")
	for i, n := range c.Nodes {
		if n != nil && i != v {
			if _, ok, _ := n.KV().Get("after-removal"); !ok {
				waitFor(t, "commit on "+c.Configs[i].NodeID, 10*time.Second, func() bool {
					_, ok, _ := n.KV().Get("after-removal")
					return ok
				})
			}
		}
	}
}
