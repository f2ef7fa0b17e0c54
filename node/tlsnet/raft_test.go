package tlsnet_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"masterorder/node/tlsnet"
)

// listFSM records every applied command.
type listFSM struct {
	mu      sync.Mutex
	entries []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, string(l.Data))
	return len(f.entries)
}

func (f *listFSM) has(cmd string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.entries, cmd)
}

func (f *listFSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.entries)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(slices.Clone(f.entries)), nil
}

func (f *listFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var entries []string
	if err := json.NewDecoder(rc).Decode(&entries); err != nil {
		return err
	}
	f.mu.Lock()
	f.entries = entries
	f.mu.Unlock()
	return nil
}

type listSnapshot []string

func (s listSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(s)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

type raftNode struct {
	id    string
	addr  raft.ServerAddress
	raft  *raft.Raft
	fsm   *listFSM
	trans *raft.NetworkTransport
	rj    *rejects
}

func startNode(t *testing.T, id string, c certs) *raftNode {
	t.Helper()
	rj := &rejects{}
	layer, err := tlsnet.NewStreamLayer("127.0.0.1:0", nil, c.server, c.client,
		tlsnet.WithHandshakeTimeout(time.Second), tlsnet.WithRejectHandler(rj.handler))
	if err != nil {
		t.Fatal(err)
	}
	return startNodeOn(t, id, layer, rj)
}

func startNodeOn(t *testing.T, id string, layer *tlsnet.StreamLayer, rj *rejects) *raftNode {
	t.Helper()
	logger := hclog.NewNullLogger()
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: 3,
		Timeout: 2 * time.Second,
		Logger:  logger,
	})
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	// Raft's shipped timeouts: 300 ms ones made leadership flap under
	// -race on a loaded 2-core machine ("node is not the leader").
	conf.HeartbeatTimeout = time.Second
	conf.ElectionTimeout = time.Second
	conf.LeaderLeaseTimeout = 500 * time.Millisecond
	conf.CommitTimeout = 10 * time.Millisecond
	conf.Logger = logger
	store := raft.NewInmemStore()
	fsm := &listFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	n := &raftNode{id: id, addr: trans.LocalAddr(), raft: r, fsm: fsm, trans: trans, rj: rj}
	t.Cleanup(func() {
		r.Shutdown().Error()
		trans.Close()
	})
	return n
}

func (n *raftNode) server() raft.Server {
	return raft.Server{ID: raft.ServerID(n.id), Address: n.addr, Suffrage: raft.Voter}
}

func leaderOf(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitFor(t, "a leader", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func applyEverywhere(t *testing.T, leader *raftNode, nodes []*raftNode, cmd string) {
	t.Helper()
	// A leader change under load is not what these tests are about: apply
	// through whichever node leads now.
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := leader.raft.Apply([]byte(cmd), 5*time.Second).Error()
		if err == nil {
			break
		}
		if !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) || time.Now().After(deadline) {
			t.Fatalf("apply %q: %v", cmd, err)
		}
		leader = leaderOf(t, nodes)
	}
	waitFor(t, cmd+" on every node", 10*time.Second, func() bool {
		for _, n := range nodes {
			if !n.fsm.has(cmd) {
				return false
			}
		}
		return true
	})
}

func TestRaftClusterOverMutualTLS(t *testing.T) {
	ca := newCA(t, "cluster")
	var nodes []*raftNode
	for _, id := range []string{"a", "b", "c"} {
		nodes = append(nodes, startNode(t, id, nodeTLS(t, ca, id)))
	}
	// Bootstrap a alone, then let b and c join over TLS.
	if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{nodes[0].server()}}).Error(); err != nil {
		t.Fatal(err)
	}
	leader := leaderOf(t, nodes[:1])
	for _, n := range nodes[1:] {
		if err := leader.raft.AddVoter(raft.ServerID(n.id), n.addr, 0, 5*time.Second).Error(); err != nil {
			t.Fatalf("add %s: %v", n.id, err)
		}
	}
	applyEverywhere(t, leader, nodes, "order-1")

	addr := string(leader.addr)

	t.Run("garbage on the raft port is closed and the cluster keeps applying", func(t *testing.T) {
		before := leader.rj.count()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Something resembling a raft RPC frame, then noise.
		c.Write([]byte{0x00, 0x82, 0xa4, 'T', 'e', 'r', 'm', 0xcd, 0xff, 0xff, 0xde, 0xad, 0xbe, 0xef})
		assertClosedByPeer(t, c, 3*time.Second)
		applyEverywhere(t, leader, nodes, "order-2")
		if leader.rj.count() <= before {
			t.Error("garbage connection was not reported as rejected")
		}
	})

	t.Run("a silent client does not block the cluster", func(t *testing.T) {
		var silent []net.Conn
		for range 5 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			silent = append(silent, c)
		}
		applyEverywhere(t, leader, nodes, "order-3")
		for _, c := range silent {
			assertClosedByPeer(t, c, 3*time.Second)
			c.Close()
		}
	})

	t.Run("TLS without a client certificate fails", func(t *testing.T) {
		cfg := nodeTLS(t, ca, "z").client.Clone()
		cfg.Certificates = nil
		cfg.NextProtos = []string{tlsnet.RaftALPN}
		err := tlsExchange(addr, cfg)
		if err == nil {
			t.Fatal("served without a client certificate")
		}
		if !strings.Contains(err.Error(), "certificate required") {
			t.Errorf("error %q, want the server's certificate-required alert", err)
		}
		applyEverywhere(t, leader, nodes, "order-4")
	})

	t.Run("a node with another CA's certificate cannot join or inject", func(t *testing.T) {
		rogue := startNode(t, "d", nodeTLS(t, newCA(t, "other"), "d"))
		rejectedBefore := leader.rj.count()

		// Whatever the leader's configuration says, replication to d
		// fails at the TLS handshake: d never receives an entry.
		// (The configuration entry itself commits, because a, b and c
		// are a quorum of four; the staff API is what guards membership.)
		if err := leader.raft.AddNonvoter("d", rogue.addr, 0, 5*time.Second).Error(); err != nil {
			t.Fatalf("add nonvoter: %v", err)
		}
		applyEverywhere(t, leader, nodes, "order-5")
		time.Sleep(time.Second)
		if got := rogue.fsm.count(); got != 0 {
			t.Errorf("rogue node applied %d entries", got)
		}
		if li := rogue.raft.LastIndex(); li != 0 {
			t.Errorf("rogue node has log up to %d", li)
		}
		if leader.rj.count() == rejectedBefore && rogue.rj.count() == 0 {
			t.Error("no handshake was rejected")
		}
		if err := leader.raft.RemoveServer("d", 0, 5*time.Second).Error(); err != nil {
			t.Fatalf("remove d: %v", err)
		}

		// d, claiming a huge term, cannot reach anyone's Raft.
		term := leader.raft.CurrentTerm()
		for _, n := range nodes {
			var resp raft.AppendEntriesResponse
			err := rogue.trans.AppendEntries(raft.ServerID(n.id), n.addr, &raft.AppendEntriesRequest{
				RPCHeader: raft.RPCHeader{ID: []byte("d"), Addr: []byte(rogue.addr)},
				Term:      term + 100,
				Entries:   []*raft.Log{{Index: 1000, Term: term + 100, Type: raft.LogCommand, Data: []byte("forged")}},
			}, &resp)
			if err == nil {
				t.Errorf("rogue AppendEntries to %s succeeded: %+v", n.id, resp)
			}
			var vote raft.RequestVoteResponse
			if err := rogue.trans.RequestVote(raft.ServerID(n.id), n.addr, &raft.RequestVoteRequest{
				RPCHeader: raft.RPCHeader{ID: []byte("d"), Addr: []byte(rogue.addr)},
				Term:      term + 100, LastLogIndex: 1000, LastLogTerm: term + 100,
			}, &vote); err == nil {
				t.Errorf("rogue RequestVote to %s succeeded: %+v", n.id, vote)
			}
		}
		if leader.raft.State() != raft.Leader || leader.raft.CurrentTerm() != term {
			t.Error("rogue RPCs disturbed the leader")
		}
		applyEverywhere(t, leader, nodes, "order-6")
		for _, n := range nodes {
			if n.fsm.has("forged") {
				t.Errorf("forged entry reached %s", n.id)
			}
		}
	})

	t.Run("stream layer address and validation", func(t *testing.T) {
		if leader.trans.LocalAddr() == "" {
			t.Error("empty local address")
		}
		c := nodeTLS(t, ca, "v")
		if _, err := tlsnet.NewStreamLayer("0.0.0.0:0", nil, c.server, c.client); err == nil {
			t.Error("wildcard bind without advertise accepted")
		}
		adv := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 7000}
		l, err := tlsnet.NewStreamLayer("127.0.0.1:0", adv, c.server, c.client)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.Addr().String() != "192.0.2.7:7000" {
			t.Errorf("Addr = %v", l.Addr())
		}
		plain := c.server.Clone()
		plain.ClientAuth = tls.NoClientCert
		if _, err := tlsnet.NewStreamLayer("127.0.0.1:0", nil, plain, c.client); err == nil {
			t.Error("server config without client auth accepted")
		}
	})
}
