package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	bolt "go.etcd.io/bbolt"
	"masterorder/kv"
	"masterorder/raftfsm"
)

var (
	// ErrNoQuorum means no leader could commit within the retry window;
	// the HTTP layer answers 503 NO_QUORUM with Retry-After.
	ErrNoQuorum = errors.New("no quorum: no leader could commit the command")
	// ErrUnknownOutcome means the command may or may not have committed
	// (leadership lost mid-request, response lost). Idempotent commands
	// are retried instead of returning it.
	ErrUnknownOutcome = errors.New("outcome unknown: leadership changed while the command was in flight")
	// ErrHalted means this node's state machine stopped (see logs).
	ErrHalted = raftfsm.ErrHalted
)

const (
	retryWindow  = 5 * time.Second
	applyTimeout = 5 * time.Second
	secretHeader = "X-MasterOrder-Cluster-Secret"
	applyErrHdr  = "X-MasterOrder-Apply-Error"
	outcomeHdr   = "X-MasterOrder-Outcome"
)

// Proposal is one command to commit.
type Proposal struct {
	Type    raftfsm.CommandType
	Version uint8
	Flags   raftfsm.Flags
	Payload []byte
	// Idempotent commands (a guest order carries its Idempotency-Key) are
	// retried on the new leader even when the first attempt's outcome is
	// unknown: applying them twice answers with a replay.
	Idempotent bool
}

// Apply commits a version-1 command through Raft and returns its result.
func (n *Node) Apply(ctx context.Context, t raftfsm.CommandType, payload []byte) ([]byte, error) {
	return n.Propose(ctx, Proposal{Type: t, Version: 1, Payload: payload})
}

// Propose commits p: on the leader directly, elsewhere forwarded to the
// leader over the internal channel, retrying across leader changes for up
// to retryWindow.
func (n *Node) Propose(ctx context.Context, p Proposal) ([]byte, error) {
	if p.Version == 0 {
		p.Version = 1
	}
	if err := n.fsm.Halted(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(retryWindow)
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var out []byte
		var err error
		if n.raft.State() == raft.Leader {
			out, err = n.applyLocal(p)
		} else {
			out, err = n.forward(ctx, p)
		}
		retry := false
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, errRetry):
			retry = true
		case errors.Is(err, ErrUnknownOutcome):
			if !p.Idempotent {
				return nil, err
			}
			retry = true
		default:
			return nil, err
		}
		if retry {
			n.metrics.proposeRetries.Inc()
		}
		if !retry || time.Now().After(deadline) {
			if errors.Is(err, ErrUnknownOutcome) {
				return nil, err
			}
			return nil, ErrNoQuorum
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("propose: %w", ctx.Err())
		case <-time.After(backoff + rand.N(backoff)):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// errRetry marks failures where the command surely did not commit.
var errRetry = errors.New("not applied; retry")

func (n *Node) applyLocal(p Proposal) ([]byte, error) {
	if err := n.fsm.Halted(); err != nil {
		// A leader that cannot apply must not commit: hand over.
		n.stepDownIfHalted()
		return nil, fmt.Errorf("%w: %v", errRetry, err)
	}
	stamp, ok := n.clock.stamp()
	if !ok || !n.ready.Load() {
		return nil, fmt.Errorf("%w: leader not ready", errRetry)
	}
	cmd := raftfsm.Command{Type: p.Type, Version: p.Version, Flags: p.Flags, FSMTime: stamp,
		WallTime: n.opts.WallClock().UnixMilli(), Payload: p.Payload}
	start := time.Now()
	f := n.raft.Apply(cmd.Encode(), applyTimeout)
	if err := n.await(f, 0); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, fmt.Errorf("%w: %v", errRetry, err)
		default:
			// ErrLeadershipLost, ErrEnqueueTimeout: it may still commit.
			// ErrRaftShutdown too: Raft also answers it for entries that
			// already committed but could not be handed to a busy FSM
			// before shutdown, so it is no proof of "not applied".
			return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
		}
	}
	n.metrics.observeCommit(start)
	resp, ok := f.Response().(raftfsm.Response)
	if !ok {
		return nil, fmt.Errorf("unexpected fsm response %T", f.Response())
	}
	if errors.Is(resp.Err, raftfsm.ErrHalted) {
		// Committed, so the others apply it, but this node's FSM halted
		// on it: the result is unknown here.
		n.stepDownIfHalted()
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, resp.Err)
	}
	return resp.Data, resp.Err
}

// forward sends p to the leader's internal endpoint.
func (n *Node) forward(ctx context.Context, p Proposal) ([]byte, error) {
	_, leaderAddr := n.LeaderID()
	if leaderAddr == "" {
		if n.cutOff() {
			// Cut off from the cluster for longer than an election takes:
			// say so now instead of holding the guest for the whole
			// retry window.
			return nil, ErrNoQuorum
		}
		return nil, fmt.Errorf("%w: no leader known", errRetry)
	}
	n.metrics.forwarded.Inc()
	body := make([]byte, 3+len(p.Payload))
	body[0], body[1], body[2] = byte(p.Type), p.Version, byte(p.Flags)
	copy(body[3:], p.Payload)
	rctx, cancel := context.WithTimeout(ctx, applyTimeout+time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.internalURL(leaderAddr, "/internal/apply"), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("forward: %w", ctx.Err())
		}
		if neverSent(err) {
			// Never connected (the old leader is gone, or a live one
			// refused the handshake): the request surely did not reach
			// it, so any command may be retried.
			return nil, fmt.Errorf("%w: forward to %s: %v", errRetry, leaderAddr, err)
		}
		// The request may have reached the leader before the failure.
		return nil, fmt.Errorf("%w: forward to %s: %v", ErrUnknownOutcome, leaderAddr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: read forwarded result: %v", ErrUnknownOutcome, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if msg := resp.Header.Get(applyErrHdr); msg != "" {
			return data, errors.New(msg)
		}
		return data, nil
	case http.StatusMisdirectedRequest:
		return nil, fmt.Errorf("%w: %s is not the leader", errRetry, leaderAddr)
	case http.StatusServiceUnavailable:
		if resp.Header.Get(outcomeHdr) == "unknown" {
			return nil, fmt.Errorf("%w: at leader: %s", ErrUnknownOutcome, data)
		}
		return nil, fmt.Errorf("%w: leader busy: %s", errRetry, data)
	default:
		return nil, fmt.Errorf("forward to %s: status %d: %s", leaderAddr, resp.StatusCode, data)
	}
}

// internalHandler serves the internal channel on the Raft port: forwarded
// commands and read-index requests from the other members.
func (n *Node) internalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /internal/apply", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || len(body) < 3 {
			http.Error(w, "bad command", http.StatusBadRequest)
			return
		}
		if n.raft.State() != raft.Leader {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		p := Proposal{Type: raftfsm.CommandType(body[0]), Version: body[1], Flags: raftfsm.Flags(body[2]), Payload: body[3:]}
		out, err := n.applyLocal(p)
		switch {
		case err == nil:
		case errors.Is(err, errRetry):
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, err.Error())
			return
		case errors.Is(err, ErrUnknownOutcome):
			w.Header().Set(outcomeHdr, "unknown")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, err.Error())
			return
		default:
			w.Header().Set(applyErrHdr, err.Error())
		}
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	})
	mux.HandleFunc("GET /internal/readindex", func(w http.ResponseWriter, r *http.Request) {
		idx, err := n.sharedLeaderReadIndex(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusMisdirectedRequest)
			return
		}
		w.Write([]byte(strconv.FormatUint(idx, 10)))
	})
	n.registerMembersInternal(mux)
	mux.HandleFunc("GET /internal/snapshot", n.serveSnapshot) // rebuild.go
	return requireSecret(n.cfg.ClusterSecret, mux)
}

func requireSecret(secret string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !constantTimeEqual(r.Header.Get(secretHeader), secret) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// leaderReadIndexWithin is the ReadIndex step on the leader: its commit
// index, confirmed by a heartbeat round that it is still the leader.
func (n *Node) leaderReadIndexWithin(timeout time.Duration) (uint64, error) {
	if n.raft.State() != raft.Leader || !n.ready.Load() {
		return 0, errors.New("not the ready leader")
	}
	idx := n.raft.CommitIndex()
	if err := n.verifyLeader(timeout); err != nil {
		return 0, fmt.Errorf("verify leader: %w", err)
	}
	return idx, nil
}

// ConsistentRead waits until this node has applied everything the cluster
// had committed when it was called (ReadIndex), so a local read after it
// sees every acknowledged write, on any node.
func (n *Node) ConsistentRead(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, retryWindow)
	defer cancel()
	backoff := 10 * time.Millisecond
	for {
		idx, err := n.readIndex(ctx)
		if err == nil {
			return n.fsm.WaitApplied(ctx, idx)
		}
		if n.raft.State() != raft.Leader && n.cutOff() {
			return ErrNoQuorum
		}
		select {
		case <-ctx.Done():
			return ErrNoQuorum
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// ReadLocal prepares a read of the local replica. With a quorum it is
// ConsistentRead (read-your-writes) and stale is false. Without one (two
// boxes dead, or this one cut off) the kitchen still needs the orders this
// box holds: it answers stale = true instead of an error. It decides so
// quickly only on evidence: no leader known, or none heard from for a
// while, for staleAfter (and only degradedTry while the previous read
// found no quorum either). While a leader is in contact, a slow ReadIndex
// (a busy box, an election just over) is waited for as ConsistentRead
// does, so reads stay read-your-writes under load.
func (n *Node) ReadLocal(ctx context.Context) (stale bool, err error) {
	if err := n.fsm.Halted(); err != nil {
		return false, err
	}
	patience := n.staleAfter()
	if n.degraded.Load() {
		patience = degradedTry
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, retryWindow)
	defer cancel()
	backoff := 10 * time.Millisecond
	for wctx.Err() == nil {
		// Each try is bounded: a leader that lost power answers nothing.
		tctx, tcancel := context.WithTimeout(wctx, time.Second)
		idx, err := n.readIndex(tctx)
		tcancel()
		if err == nil {
			// The cluster answered; applying needs no quorum.
			if n.fsm.WaitApplied(wctx, idx) == nil {
				n.degraded.Store(false)
				return false, nil
			}
			break
		}
		if !n.inContact() && time.Since(start) >= patience {
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
	if ctx.Err() != nil {
		return false, ctx.Err() // the caller went away; nothing to serve
	}
	if err := n.fsm.Halted(); err != nil {
		return false, err
	}
	n.degraded.Store(true)
	return true, nil
}

// degradedTry is how long a read tries for a ReadIndex while the previous
// read found no quorum: long enough for a live leader's round trip.
const degradedTry = 300 * time.Millisecond

// staleAfter is how long a read without contact to a leader waits for one
// before it serves the replica as stale: an election usually completes
// within it, so reads stay read-your-writes through a failover.
func (n *Node) staleAfter() time.Duration {
	return min(max(time.Second, 4*n.cfg.Raft.ElectionTimeout.Duration), 3*time.Second)
}

// inContact reports that this node leads (a leader without a quorum steps
// down within its lease) or heard from a known leader lately.
func (n *Node) inContact() bool {
	if n.raft.State() == raft.Leader {
		return true
	}
	if _, id := n.raft.LeaderWithID(); id == "" {
		return false
	}
	return time.Since(n.raft.LastContact()) <= max(time.Second, 2*n.cfg.Raft.ElectionTimeout.Duration)
}

// readIndex is the commit index of a ReadIndex round that started after
// the call; concurrent callers share rounds (readindex.go).
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.sharedLeaderReadIndex(ctx)
	}
	return n.remoteRounds.do(ctx, n.remoteReadIndex, n.ctx)
}

// remoteReadIndex asks the leader for a ReadIndex round.
func (n *Node) remoteReadIndex(ctx context.Context) (uint64, error) {
	_, addr := n.LeaderID()
	if addr == "" {
		return 0, errors.New("no leader known")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(addr, "/internal/readindex"), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read index from %s: %s", addr, b)
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// kvDue peeks whether any coordination key has lapsed.
func (n *Node) kvDue() bool {
	due := false
	now := n.FSMNow()
	n.fsm.View(func(tx *bolt.Tx) error {
		due = kv.Due(tx, now)
		return nil
	})
	return due
}

var _ kv.Applier = (*Node)(nil)

// internalURL addresses a peer's internal channel on its raft port.
func (n *Node) internalURL(raftAddr, path string) string {
	return "https://" + raftAddr + path
}

// cutOff reports that this node has heard from no leader for well over an
// election (a partitioned follower), as opposed to a failover in progress.
func (n *Node) cutOff() bool {
	last := n.raft.LastContact()
	if last.IsZero() {
		last = n.started
	}
	grace := max(2*time.Second, 3*n.cfg.Raft.ElectionTimeout.Duration)
	return time.Since(last) > grace
}

// verifyLeader confirms leadership with a heartbeat round, bounded: Raft's
// VerifyLeader has no timeout of its own and can wait indefinitely when
// leadership is lost in the middle of the round.
func (n *Node) verifyLeader(timeout time.Duration) error {
	err := n.await(n.raft.VerifyLeader(), timeout)
	if errors.Is(err, errFutureTimeout) {
		return errors.New("verify leader: timed out")
	}
	return err
}
