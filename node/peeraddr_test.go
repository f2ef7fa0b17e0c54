package node_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/peerfind"
)

// TestMembersFoundByIDNotAddress: every box's configuration lists the
// others at addresses they no longer have (TEST-NET-1, never routed:
// what a new DHCP lease does to a store's config), and the LAN says where
// each one is now. The boxes still elect a leader, a write through a
// follower reaches it (the internal channel), every box holds it, and
// the status shows where each member is now. Before boxes were found by
// id, no dial ever left for the right address.
func TestMembersFoundByIDNotAddress(t *testing.T) {
	var mu sync.Mutex
	now := map[string]peerfind.Member{}
	var asked int
	find := func(ctx context.Context) (map[string]peerfind.Member, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		out := map[string]peerfind.Member{}
		for id, m := range now {
			out[id] = m
		}
		return out, nil
	}
	stale := func(addr string, i int) string {
		_, port, _ := net.SplitHostPort(addr)
		return net.JoinHostPort(fmt.Sprintf("192.0.2.%d", 11+i), port)
	}
	c := nodetest.Start(t, 3, func(i int, cfg *node.Config) {
		for j := range cfg.Peers {
			cfg.Peers[j].RaftAddr = stale(cfg.Peers[j].RaftAddr, j)
			cfg.Peers[j].HTTPAddr = stale(cfg.Peers[j].HTTPAddr, j)
		}
		cfg.RaftAddr, cfg.HTTPAddr = cfg.Peers[i].RaftAddr, cfg.Peers[i].HTTPAddr
		mu.Lock()
		now[cfg.NodeID] = peerfind.Member{NodeID: cfg.NodeID, IP: net.IPv4(127, 0, 0, 1)}
		mu.Unlock()
	}, func(i int) node.Options { return node.Options{FindPeers: find} }, nil)

	_, f := c.Follower()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		err := f.KV().Put(ctx, "renumbered", []byte("yes"), 0)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("a write through a follower never reached the leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.WaitConverged(20 * time.Second)
	for _, m := range f.Status().Nodes {
		if !strings.HasPrefix(m.HTTPAddr, "127.0.0.1:") && m.ID != f.Config().NodeID {
			t.Errorf("status shows member %s at %s, not where it is now", m.ID, m.HTTPAddr)
		}
	}
	// A page loaded from a member's address now (in no config) may call
	// the others: the guest app fails over between the boxes.
	self := f.Config().NodeID
	var other node.MemberStatus
	for _, m := range f.Status().Nodes {
		if m.ID != self {
			other = m
		}
	}
	_, selfPort, _ := net.SplitHostPort(f.Config().HTTPAddr)
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+selfPort+"/api/cluster/status", nil)
	req.Header.Set("Origin", "http://"+other.HTTPAddr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "http://"+other.HTTPAddr {
		t.Errorf("a page from member %s's address now (%s) may not call %s: Access-Control-Allow-Origin %q", other.ID, other.HTTPAddr, self, got)
	}
	mu.Lock()
	n := asked
	mu.Unlock()
	t.Logf("LAN asked %d times by three boxes", n)
}
