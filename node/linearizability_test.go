package node_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/anishathalye/porcupine"
	"github.com/rs/zerolog"

	"masterorder/kv"
	"masterorder/node"
	"masterorder/node/nodetest"
)

// linkProxies puts an in-process toxiproxy proxy on every directed Raft
// link: node i dials peer j through proxy (i,j) (Peer.DialAddr), for Raft
// and for the internal channel alike. Disabling proxies cuts links.
type linkProxies struct {
	t   testing.TB
	srv *toxiproxy.ApiServer
	mu  sync.Mutex
	p   map[[2]int]*toxiproxy.Proxy
}

func newLinkProxies(t testing.TB) *linkProxies {
	lp := &linkProxies{t: t, srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		p: map[[2]int]*toxiproxy.Proxy{}}
	// Registered before the cluster's cleanup, so it runs after the nodes
	// stopped.
	t.Cleanup(func() {
		lp.mu.Lock()
		defer lp.mu.Unlock()
		for _, p := range lp.p {
			p.Stop()
		}
	})
	return lp
}

// mutate is a nodetest mutate hook: it creates node i's outgoing proxies.
func (lp *linkProxies) mutate(i int, c *node.Config) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for j := range c.Peers {
		if j == i {
			continue
		}
		listen := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(lp.t))
		p := toxiproxy.NewProxy(lp.srv, fmt.Sprintf("%d->%d", i, j), listen, c.Peers[j].RaftAddr)
		if err := p.Start(); err != nil {
			lp.t.Fatalf("start proxy %d->%d: %v", i, j, err)
		}
		lp.p[[2]int{i, j}] = p
		c.Peers[j].DialAddr = p.Listen
	}
}

// isolate cuts (or, with on, restores) every link to and from node x.
func (lp *linkProxies) isolate(x int, cut bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for k, p := range lp.p {
		if k[0] != x && k[1] != x {
			continue
		}
		if cut {
			p.Stop()
		} else if err := p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			lp.t.Errorf("restart proxy %s: %v", p.Name, err)
		}
	}
}

// The register model: one register per key, "" when absent.
const (
	opSetIfAbsent = iota
	opCompareAndDelete
	opGet
)

type linInput struct {
	Op  int
	Key string
	Val string
}

type linOutput struct {
	OK      bool
	Val     string // Get's result
	Unknown bool   // the write may or may not have happened
}

var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(linInput).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(string), input.(linInput), output.(linOutput)
		switch in.Op {
		case opSetIfAbsent:
			if out.Unknown {
				if s == "" {
					return true, in.Val
				}
				return true, s
			}
			if out.OK {
				return s == "", in.Val
			}
			return s != "", s
		case opCompareAndDelete:
			if out.Unknown {
				if s == in.Val {
					return true, ""
				}
				return true, s
			}
			if out.OK {
				return s == in.Val, ""
			}
			return s != in.Val, s
		default:
			return out.Val == s, s
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		res := fmt.Sprint(out.OK)
		if out.Unknown {
			res = "?"
		}
		switch in.Op {
		case opSetIfAbsent:
			return fmt.Sprintf("setIfAbsent(%s, %s) -> %s", in.Key, in.Val, res)
		case opCompareAndDelete:
			return fmt.Sprintf("compareAndDelete(%s, %s) -> %s", in.Key, in.Val, res)
		default:
			return fmt.Sprintf("get(%s) -> %q", in.Key, out.Val)
		}
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("%q", state) },
}

// Concurrent SetIfAbsent / CompareAndDelete / linearizable Get
// (ConsistentRead, then a local read) from clients on every node, while the
// leader is stopped and restarted and a node is cut off from the others:
// the history must be linearizable for a register per key.
func TestLinearizableUnderLeaderLossAndPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 12 s fault schedule")
	}
	lp := newLinkProxies(t)
	c := nodetest.Start(t, 3, lp.mutate, nil, nil)
	var live [3]atomic.Pointer[node.Node]
	for i, n := range c.Nodes {
		live[i].Store(n)
	}

	const clients = 6
	keys := []string{"lin:a", "lin:b", "lin:c"}
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }

	var (
		histMu  sync.Mutex
		history []porcupine.Operation
		stats   = map[string]int{}
	)
	record := func(op porcupine.Operation, kind string) {
		histMu.Lock()
		if op.Input != nil {
			history = append(history, op)
		}
		stats[kind]++
		histMu.Unlock()
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cl), 42))
			mine := map[string]string{} // key -> a value this client wrote or read
			for seq := 0; ctx.Err() == nil; seq++ {
				var n *node.Node
				for k := 0; k < 3 && n == nil; k++ {
					n = live[(cl+k)%3].Load()
				}
				if n == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				key := keys[rng.IntN(len(keys))]
				in := linInput{Key: key}
				switch r := rng.IntN(10); {
				case r < 4:
					in.Op, in.Val = opSetIfAbsent, fmt.Sprintf("c%d-%d", cl, seq)
				case r < 7 && mine[key] != "":
					in.Op, in.Val = opCompareAndDelete, mine[key]
				default:
					in.Op = opGet
				}
				opCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				call := now()
				var out linOutput
				var err error
				switch in.Op {
				case opSetIfAbsent:
					out.OK, err = n.KV().SetIfAbsent(opCtx, key, []byte(in.Val), 0)
					if err == nil || !errors.Is(err, node.ErrNoQuorum) {
						mine[key] = in.Val
					}
				case opCompareAndDelete:
					out.OK, err = n.KV().CompareAndDelete(opCtx, key, []byte(in.Val))
				case opGet:
					if err = n.ConsistentRead(opCtx); err == nil {
						var e kv.Entry
						var ok bool
						if e, ok, err = n.KV().Get(key); err == nil && ok {
							out.Val = string(e.Value)
							mine[key] = out.Val
						}
					}
				}
				ret := now()
				cancel()
				op := porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret}
				switch {
				case err == nil:
					record(op, "ok")
				case in.Op == opGet:
					// A failed read has no effect: leave it out.
					record(porcupine.Operation{}, "read failed")
				case errors.Is(err, node.ErrNoQuorum):
					// Every attempt surely did not commit: no effect.
					record(porcupine.Operation{}, "no quorum")
				default:
					// Unknown outcome: it may take effect at any time
					// after the call, even after every other operation.
					op.Output = linOutput{Unknown: true}
					op.Return = math.MaxInt64
					record(op, "unknown")
				}
				time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond)
			}
		}(cl)
	}

	step := func(d time.Duration, what string, fn func()) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		t.Logf("%5.1fs %s", time.Since(start).Seconds(), what)
		fn()
	}
	var li, pi int
	step(1500*time.Millisecond, "stop the leader", func() {
		li, _ = c.WaitLeader(10 * time.Second)
		live[li].Store(nil)
		c.StopNode(li)
	})
	step(2*time.Second, "restart it", func() {
		live[li].Store(c.StartNode(li))
	})
	step(1500*time.Millisecond, "cut the leader off from the others", func() {
		pi, _ = c.WaitLeader(10 * time.Second)
		lp.isolate(pi, true)
	})
	step(3*time.Second, "heal", func() { lp.isolate(pi, false) })
	step(1500*time.Millisecond, "cut a follower off", func() {
		pi, _ = c.Follower()
		lp.isolate(pi, true)
	})
	step(1500*time.Millisecond, "heal", func() { lp.isolate(pi, false) })
	step(1500*time.Millisecond, "stop the clients", stop)
	wg.Wait()

	histMu.Lock()
	t.Logf("%d operations in the history; outcomes %v", len(history), stats)
	histMu.Unlock()
	if stats["ok"] < 50 {
		t.Fatalf("only %d operations completed; the history proves little", stats["ok"])
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, 60*time.Second)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("linearizability check timed out over %d operations", len(history))
	default:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("masterorder-linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
			t.Logf("write visualization: %v", err)
		}
		t.Fatalf("history is not linearizable; visualization in %s", path)
	}
	c.AssertIdentical(15 * time.Second)
}
