package node_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/raftfsm"
)

// cmdIncr is a deliberately non-idempotent test command: every apply adds
// one to a counter, so a command committed twice shows.
const cmdIncr raftfsm.CommandType = 200

var counterBucket = []byte("test-counter")

// incrOptions registers cmdIncr on every node; while slow[i] is set, node
// i's state machine takes that long over each apply (a busy SD card), which
// holds a committed entry in flight on that node; slowOnce[i] delays only
// the next apply on node i.
var slowOnce [3]atomic.Int64

func incrOptions(slow []atomic.Int64) func(i int) node.Options {
	for i := range slowOnce {
		slowOnce[i].Store(0)
	}
	return func(i int) node.Options {
		return node.Options{Register: func(reg *raftfsm.Registry) {
			reg.Register(cmdIncr, "test.incr", func(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
				if d := slow[i].Load(); d > 0 {
					time.Sleep(time.Duration(d))
				}
				if d := slowOnce[i].Swap(0); d > 0 {
					time.Sleep(time.Duration(d))
				}
				b, err := ctx.Bolt.CreateBucketIfNotExists(counterBucket)
				if err != nil {
					return nil, err
				}
				// The total, and one count per payload (a proposal id).
				for _, k := range [][]byte{[]byte("n"), append([]byte("id/"), payload...)} {
					var n uint64
					if v := b.Get(k); len(v) == 8 {
						n = binary.BigEndian.Uint64(v)
					}
					if err := b.Put(k, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
						return nil, err
					}
				}
				return nil, nil
			})
		}}
	}
}

func counterOf(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	var v uint64
	n.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(counterBucket); b != nil {
			if raw := b.Get([]byte("n")); len(raw) == 8 {
				v = binary.BigEndian.Uint64(raw)
			}
		}
		return nil
	})
	return v
}

// A command that reached the leader's log and committed must not be
// proposed again when the leader shuts down before answering: its outcome
// is unknown to the forwarder, not "surely not applied".
func TestForwardedCommandNotReproposedWhenLeaderStopsMidApply(t *testing.T) {
	err := proposeWhileLeaderStopsMidApply(t, func(_, follower *node.Node) *node.Node { return follower })
	if err != nil && !errors.Is(err, node.ErrUnknownOutcome) {
		t.Fatalf("Propose = %v; want success or ErrUnknownOutcome (it did commit)", err)
	}
	t.Logf("Propose through the follower: %v", err)
}

// The same on the leader itself: Propose on the leader must not retry a
// command whose future failed because Raft shut down under it.
func TestLocalCommandNotReproposedWhenLeaderStopsMidApply(t *testing.T) {
	err := proposeWhileLeaderStopsMidApply(t, func(leader, _ *node.Node) *node.Node { return leader })
	if err != nil && !errors.Is(err, node.ErrUnknownOutcome) && !errors.Is(err, node.ErrNoQuorum) {
		t.Fatalf("Propose = %v", err)
	}
	t.Logf("Propose on the leader: %v", err)
}

// proposeWhileLeaderStopsMidApply proposes one increment through the node
// via picks, stops the leader once the followers applied it (the leader is
// still applying, slowed down), and checks that the cluster applied it
// exactly once. It returns what Propose answered.
func proposeWhileLeaderStopsMidApply(t *testing.T, via func(leader, follower *node.Node) *node.Node) error {
	t.Helper()
	slow := make([]atomic.Int64, 3)
	c := nodetest.Start(t, 3, lanTimeouts, incrOptions(slow), nil)
	li, leader := c.WaitLeader(5 * time.Second)
	fi, f := c.Follower()
	slow[li].Store(int64(800 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := via(leader, f).Propose(context.Background(), node.Proposal{Type: cmdIncr, Version: 1})
		done <- err
	}()
	// Committed: the followers applied it; the leader is still applying.
	deadline := time.Now().Add(5 * time.Second)
	for counterOf(t, f) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("command not applied on the follower")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var stopped sync.WaitGroup
	stopped.Go(func() { c.StopNode(li) })
	err := <-done
	stopped.Wait()
	c.WaitConverged(10 * time.Second)
	if got := counterOf(t, c.Nodes[fi]); got != 1 {
		t.Fatalf("counter = %d after one proposal (err %v): the command was proposed again", got, err)
	}
	return err
}

// duplicates lists the proposal ids node n applied more than once.
func duplicates(t *testing.T, n *node.Node) []string {
	t.Helper()
	var dups []string
	n.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(counterBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) > 3 && string(k[:3]) == "id/" && binary.BigEndian.Uint64(v) > 1 {
				dups = append(dups, string(k[3:]))
			}
			return nil
		})
	})
	return dups
}

// When the leader's state machine is busy and its apply queue is full,
// Raft answers the committed entries it could not hand over at shutdown
// with ErrRaftShutdown. Those entries are committed: the forwarder must
// not propose them again.
func TestCommittedEntriesNotReproposedWhenLeaderShutsDownWithFullApplyQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the apply queue")
	}
	slow := make([]atomic.Int64, 3)
	c := nodetest.Start(t, 3, lanTimeouts, incrOptions(slow), nil)
	li, leader := c.WaitLeader(5 * time.Second)
	fi, f := c.Follower()
	slowOnce[li].Store(int64(3 * time.Second))

	var wg sync.WaitGroup
	var ok, unknown, other atomic.Int64
	full := func() bool { return leader.Raft().Stats()["fsm_pending"] == "128" }
	start := time.Now()
	for k := 0; !full() && time.Since(start) < 2*time.Second; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			_, err := f.Propose(context.Background(), node.Proposal{Type: cmdIncr, Version: 1, Payload: []byte(fmt.Sprint(k))})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, node.ErrUnknownOutcome):
				unknown.Add(1)
			default:
				other.Add(1)
			}
		}(k)
		// One commit each, so each is its own batch on the apply queue.
		time.Sleep(2 * time.Millisecond)
	}
	// A few more that wait behind the full queue.
	for k := 10000; k < 10010; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			f.Propose(context.Background(), node.Proposal{Type: cmdIncr, Version: 1, Payload: []byte(fmt.Sprint(k))})
		}(k)
		time.Sleep(3 * time.Millisecond)
	}
	t.Logf("leader apply queue: %s batches", leader.Raft().Stats()["fsm_pending"])
	c.StopNode(li)
	wg.Wait()
	t.Logf("proposals: %d ok, %d unknown outcome, %d other errors", ok.Load(), unknown.Load(), other.Load())
	c.WaitConverged(10 * time.Second)
	if d := duplicates(t, c.Nodes[fi]); len(d) > 0 {
		t.Fatalf("%d proposals applied twice (ids %v)", len(d), d)
	}
}

// A forward that could not even connect to the old leader (it is gone)
// surely did not reach it: a non-idempotent command is retried on the new
// leader instead of failing with an unknown outcome.
func TestForwardRetriesWhenLeaderRefusesConnections(t *testing.T) {
	c := nodetest.Start(t, 3, lanTimeouts, nil, nil)
	li, _ := c.WaitLeader(5 * time.Second)
	fi, f := c.Follower()
	c.StopNode(li)
	if id, _ := f.LeaderID(); id != c.Configs[li].NodeID {
		t.Logf("follower already knows the leader is gone (leader %q); the test proves less", id)
	}
	start := time.Now()
	ok, err := f.KV().SetIfAbsent(context.Background(), "after-leader-gone", []byte("x"), 0)
	t.Logf("write through the follower took %v", time.Since(start).Round(time.Millisecond))
	if err != nil || !ok {
		t.Fatalf("SetIfAbsent through follower %d right after the leader stopped = %v, %v; want a retry on the new leader", fi, ok, err)
	}
}

// An error the leader's state machine answers keeps its identity when the
// command was forwarded: errors.Is answers the same on a follower.
func TestForwardedErrorKeepsItsIdentity(t *testing.T) {
	c := nodetest.Start(t, 3, lanTimeouts, nil, nil)
	_, l := c.WaitLeader(5 * time.Second)
	_, f := c.Follower()
	// A type no node knows, flagged ignorable: every node skips it and
	// answers ErrUnknownCommand.
	p := node.Proposal{Type: 250, Version: 1, Flags: raftfsm.FlagIgnorable}
	for name, n := range map[string]*node.Node{"leader": l, "follower": f} {
		_, err := n.Propose(context.Background(), p)
		if !errors.Is(err, raftfsm.ErrUnknownCommand) {
			t.Errorf("Propose on the %s = %v; want errors.Is ErrUnknownCommand", name, err)
		}
	}
}
