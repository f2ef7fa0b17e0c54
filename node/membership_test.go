package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/pki"
)

// smallSnapshots makes the leader compact its log after a few entries, so
// a box added later must catch up by snapshot install.
func smallSnapshots(_ int, c *node.Config) {
	c.Raft.SnapshotThreshold = 64
	c.Raft.TrailingLogs = 16
	c.Raft.SnapshotInterval.Duration = 50 * time.Millisecond
}

func writeKeys(t *testing.T, n *node.Node, prefix string, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		if err := n.KV().Put(ctx, fmt.Sprintf("%s%04d", prefix, i), []byte("v"), 0); err != nil {
			t.Fatalf("put %s%d: %v", prefix, i, err)
		}
	}
}

// addBox appends a joining node to the cluster (not started).
func addBox(t *testing.T, c *nodetest.Cluster, id string, peers []node.Peer) int {
	t.Helper()
	cfg := c.Configs[0]
	cfg.NodeID = id
	cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	cfg.RaftAddr = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	cfg.DataDir = t.TempDir()
	cfg.Join = true
	// Its own certificate: a box dialled as d must prove it is d.
	tlsDir := filepath.Dir(cfg.TLS.CAFile)
	ca, err := pki.LoadCAFiles(tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.IssueNode(id, []string{"127.0.0.1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteNodeFiles(tlsDir, id, cert, key); err != nil {
		t.Fatal(err)
	}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = pki.NodeCertFile(tlsDir, id), pki.NodeKeyFile(tlsDir, id)
	cfg.Peers = append(append([]node.Peer(nil), peers...), node.Peer{ID: id, RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr})
	c.Configs = append(c.Configs, cfg)
	c.Nodes = append(c.Nodes, nil)
	return len(c.Configs) - 1
}

func member(n *node.Node, id string) (node.MemberStatus, bool) {
	for _, m := range n.Members() {
		if m.ID == id {
			return m, true
		}
	}
	return node.MemberStatus{}, false
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitCaughtUp(t *testing.T, c *nodetest.Cluster, i int) {
	t.Helper()
	_, leader := c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Nodes[i].FSM().WaitApplied(ctx, leader.Raft().CommitIndex()); err != nil {
		t.Fatalf("node %d did not catch up: %v", i, err)
	}
}

func memberCode(err error) string {
	var me *node.MemberError
	if errors.As(err, &me) {
		return me.Code
	}
	return ""
}

// The procedure for a dead box (docs/operations.md): box c dies, it is removed, a new
// box d joins as a voter, catches up by snapshot, and counts for quorum.
func TestReplaceDeadBox(t *testing.T) {
	c := nodetest.Start(t, 3, smallSnapshots, nil, nil)
	_, leader := c.WaitLeader(10 * time.Second)
	writeKeys(t, leader, "before/", 0, 300)
	peers := append([]node.Peer(nil), c.Configs[0].Peers...)

	c.StopNode(2) // box c dies
	_, leader = c.WaitLeader(10 * time.Second)
	// The leader must see the other live box before it lets c go.
	other := 0
	if leader == c.Nodes[0] {
		other = 1
	}
	waitFor(t, "the leader to reach the other live box", 10*time.Second, func() bool {
		m, ok := member(leader, c.Configs[other].NodeID)
		return ok && m.Reachable
	})
	// The owner's page says since when c has not answered.
	waitFor(t, "the status to say since when c is down", 10*time.Second, func() bool {
		m, ok := member(leader, "c")
		return ok && !m.Reachable && m.DownSince != ""
	})
	if m, _ := member(leader, "c"); !isRFC3339(m.DownSince) {
		t.Fatalf("downSince %q is not RFC 3339", m.DownSince)
	}
	if m, _ := member(leader, c.Configs[other].NodeID); m.DownSince != "" {
		t.Fatalf("a live box is down since %s", m.DownSince)
	}
	ctx := context.Background()
	// Removing a live box now would leave a and dead c: refused.
	if err := c.Nodes[other].RemoveMember(ctx, c.Configs[other].NodeID); memberCode(err) != "WOULD_LOSE_QUORUM" {
		t.Fatalf("removing a live box with c dead: %v, want WOULD_LOSE_QUORUM", err)
	}
	// Through the follower: forwarded to the leader.
	if err := c.Nodes[other].RemoveMember(ctx, "c"); err != nil {
		t.Fatalf("remove c: %v", err)
	}
	if _, ok := member(leader, "c"); ok {
		t.Fatal("c still a member after removal")
	}
	if err := leader.RemoveMember(ctx, "c"); memberCode(err) != "MEMBER_NOT_FOUND" {
		t.Fatalf("removing c again: %v, want MEMBER_NOT_FOUND", err)
	}
	writeKeys(t, leader, "between/", 0, 200)

	d := addBox(t, c, "d", peers)
	c.StartNode(d)
	if err := c.Nodes[other].AddMember(ctx, "d", c.Configs[d].RaftAddr, c.Configs[d].HTTPAddr, true); err != nil {
		t.Fatalf("add d: %v", err)
	}
	waitCaughtUp(t, c, d)
	if idx, _ := strconv.ParseUint(c.Nodes[d].Raft().Stats()["last_snapshot_index"], 10, 64); idx == 0 {
		t.Fatal("d caught up without a snapshot install; the test wants the snapshot path")
	}
	m, ok := member(leader, "d")
	if !ok || m.Suffrage != "voter" || m.HTTPAddr != c.Configs[d].HTTPAddr {
		t.Fatalf("d in the leader's status: %+v %v", m, ok)
	}
	// Writes through the new box.
	writeKeys(t, c.Nodes[d], "after/", 0, 50)
	c.AssertIdentical(10 * time.Second)

	// d is a real voter: with the other old box down, a and d commit.
	c.StopNode(other)
	_, leader = c.WaitLeader(10 * time.Second)
	writeKeys(t, leader, "quorum/", 0, 20)
	c.StartNode(other)
	c.AssertIdentical(10 * time.Second)
	for _, i := range []int{0, 1, d} {
		if _, ok, _ := c.Nodes[i].KV().Get("quorum/0019"); !ok {
			t.Fatalf("node %d misses the last write", i)
		}
	}
}

// A fourth box joins as a non-voter, catches up, and is promoted.
func TestAddNonVoterAndPromote(t *testing.T) {
	c := nodetest.Start(t, 3, smallSnapshots, nil, nil)
	_, leader := c.WaitLeader(10 * time.Second)
	writeKeys(t, leader, "k/", 0, 300)
	d := addBox(t, c, "d", c.Configs[0].Peers)
	c.StartNode(d)
	ctx := context.Background()
	if err := leader.AddMember(ctx, "d", c.Configs[d].RaftAddr, c.Configs[d].HTTPAddr, false); err != nil {
		t.Fatalf("add d as non-voter: %v", err)
	}
	waitCaughtUp(t, c, d)
	if m, ok := member(leader, "d"); !ok || m.Suffrage != "nonvoter" {
		t.Fatalf("d after add: %+v %v", m, ok)
	}
	// Idempotent and conflicting adds.
	if err := leader.AddMember(ctx, "d", c.Configs[d].RaftAddr, c.Configs[d].HTTPAddr, false); err != nil {
		t.Fatalf("adding d again: %v", err)
	}
	if err := leader.AddMember(ctx, "d", "127.0.0.1:1", c.Configs[d].HTTPAddr, false); memberCode(err) != "MEMBER_EXISTS" {
		t.Fatalf("adding d at another address: %v", err)
	}
	if err := leader.AddMember(ctx, "e", c.Configs[d].RaftAddr, "127.0.0.1:2", false); memberCode(err) != "ADDRESS_IN_USE" {
		t.Fatalf("adding e at d's address: %v", err)
	}
	if err := leader.AddMember(ctx, "bad id!", "127.0.0.1:3", "127.0.0.1:4", false); memberCode(err) != "INVALID_MEMBER" {
		t.Fatalf("adding a bad id: %v", err)
	}
	if err := leader.PromoteMember(ctx, "nobody"); memberCode(err) != "MEMBER_NOT_FOUND" {
		t.Fatalf("promoting nobody: %v", err)
	}

	_, f := c.Follower()
	if err := f.PromoteMember(ctx, "d"); err != nil {
		t.Fatalf("promote d: %v", err)
	}
	if m, ok := member(leader, "d"); !ok || m.Suffrage != "voter" {
		t.Fatalf("d after promote: %+v %v", m, ok)
	}
	if err := leader.PromoteMember(ctx, "d"); err != nil {
		t.Fatalf("promoting a voter again: %v", err)
	}
	writeKeys(t, c.Nodes[d], "d/", 0, 50)
	c.AssertIdentical(10 * time.Second)

	// The new box survives a restart from its own files.
	c.StopNode(d)
	writeKeys(t, leader, "while-d-down/", 0, 20)
	c.StartNode(d)
	c.AssertIdentical(10 * time.Second)
}

func TestJoinConfig(t *testing.T) {
	cfg := nodetest.Configs(t, 3, t.TempDir())[0]
	cfg.Peers = cfg.Peers[1:]
	if err := cfg.Validate(); err == nil {
		t.Fatal("a config whose peers miss this node validated without join")
	}
	cfg.Join = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("join config: %v", err)
	}
}

func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}
