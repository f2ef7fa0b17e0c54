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

// Commands a follower forwards while others are in flight ride to the
// leader together: fewer requests than commands, every command applied
// once on every box, and each caller given its own command's answer (a
// refusal among successes, an error that keeps its identity). A leader of
// an older build, which does not know the batch request, gets them one by
// one with the same outcome.
func TestForwardsRideTogether(t *testing.T) {
	for _, older := range []bool{false, true} {
		name := "leader batches"
		if older {
			name = "older leader"
		}
		t.Run(name, func(t *testing.T) {
			c := nodetest.Start(t, 3, nil, incrOptions(make([]atomic.Int64, 3)), nil)
			_, l := c.WaitLeader(5 * time.Second)
			l.RefuseForwardBatches(older)
			_, f := c.Follower()
			ctx := context.Background()
			// Every even key exists before: its SetIfAbsent answers false.
			const keys = 64
			for i := 0; i < keys; i += 2 {
				if ok, err := l.KV().SetIfAbsent(ctx, fmt.Sprintf("k%d", i), []byte("before"), 0); err != nil || !ok {
					t.Fatalf("set k%d on the leader: %v %v", i, ok, err)
				}
			}
			c.WaitConverged(10 * time.Second)
			before := f.ForwardRequests()

			const callers, each = 16, 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []string
			fail := func(format string, args ...any) {
				mu.Lock()
				failures = append(failures, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			for g := range callers {
				wg.Go(func() {
					for j := range each {
						switch n := g*each + j; {
						case n%8 == 7:
							// A type no box knows, flagged ignorable.
							_, err := f.Propose(ctx, node.Proposal{Type: 250, Version: 1, Flags: raftfsm.FlagIgnorable})
							if !errors.Is(err, raftfsm.ErrUnknownCommand) {
								fail("command %d: %v, want ErrUnknownCommand", n, err)
							}
						case n < keys:
							ok, err := f.KV().SetIfAbsent(ctx, fmt.Sprintf("k%d", n), []byte("now"), 0)
							if err != nil || ok != (n%2 == 1) {
								fail("SetIfAbsent k%d = %v, %v; want %v", n, ok, err, n%2 == 1)
							}
						default:
							if _, err := f.Propose(ctx, node.Proposal{Type: cmdIncr, Payload: fmt.Appendf(nil, "%d", n)}); err != nil {
								fail("incr %d: %v", n, err)
							}
						}
					}
				})
			}
			wg.Wait()
			for _, m := range failures {
				t.Error(m)
			}
			var incrs uint64
			for n := keys; n < callers*each; n++ {
				if n%8 != 7 {
					incrs++
				}
			}
			c.WaitConverged(10 * time.Second)
			for i, n := range c.Nodes {
				if got := counterOf(t, n); got != incrs {
					t.Errorf("node %d applied %d increments, want %d", i, got, incrs)
				}
				n.View(func(tx *bolt.Tx) error {
					return tx.Bucket(counterBucket).ForEach(func(k, v []byte) error {
						if string(k) != "n" && binary.BigEndian.Uint64(v) != 1 {
							t.Errorf("node %d applied %s %d times", i, k, binary.BigEndian.Uint64(v))
						}
						return nil
					})
				})
			}
			requests := f.ForwardRequests() - before
			t.Logf("%d commands forwarded in %d requests", callers*each, requests)
			if !older && requests >= callers*each {
				t.Errorf("%d commands took %d forward requests: none rode together", callers*each, requests)
			}
			c.AssertIdentical(10 * time.Second)
		})
	}
}
