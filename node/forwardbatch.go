package node

// A follower's forwards ride together: the commands it receives while
// forwards are in flight go to the leader in one request of the internal
// channel (POST /internal/apply-batch), as etcd's followers send their
// proposals down one stream. One request per command cost both ends about
// 50 µs of HTTP/2 and TLS work per order when phones reach every box. The
// leader commits a batch's commands side by side, so Raft still writes
// them to its log together, and answers each one in order. A lone command
// still goes alone (/internal/apply), so a quiet store works as before.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// forwardBatchMax and forwardBatchBytes bound one batch request.
	forwardBatchMax   = 64
	forwardBatchBytes = 1 << 20
	// forwardsInFlight is how many forward requests a box keeps open at
	// once: a command arriving while they are all out waits for the next
	// one to leave, with whatever else arrived meanwhile.
	forwardsInFlight = 4
	// legacyRecheck is how long a leader that does not know apply-batch
	// (an older build, in a rolling update) gets single forwards before a
	// batch is tried again.
	legacyRecheck = time.Minute
)

// Kinds of one command's answer in a batch's response.
const (
	batchOK      byte = iota // the result
	batchErr                 // the state machine's error: code, message, result
	batchRetry               // surely not applied: message
	batchUnknown             // may have been applied: message
)

// forwardCall is one command waiting in, or riding, a batch.
type forwardCall struct {
	addr string // the leader's raft address it is for
	body []byte // forwardHeader + payload
	out  []byte
	err  error
	done chan struct{}
}

// forwardBatcher queues a box's forwards and sends them in batches.
type forwardBatcher struct {
	mu       sync.Mutex
	queue    []*forwardCall
	inFlight int
	legacy   map[string]time.Time // leader address → until when it gets single forwards
	requests uint64               // forward requests sent, for tests

	refuseBatches atomic.Bool // tests: answer apply-batch as a leader of an older build
}

// forwardQueued sends a forwardHeader-encoded command to the leader at
// addr, alone or with others, and returns its result.
func (n *Node) forwardQueued(ctx context.Context, addr string, body []byte) ([]byte, error) {
	b := &n.fwd
	call := &forwardCall{addr: addr, body: body, done: make(chan struct{})}
	b.mu.Lock()
	if until, ok := b.legacy[addr]; ok && time.Now().Before(until) {
		b.requests++
		b.mu.Unlock()
		return n.forwardOne(ctx, addr, body)
	}
	b.queue = append(b.queue, call)
	if b.inFlight < forwardsInFlight {
		b.inFlight++
		go n.sendForwards()
	}
	b.mu.Unlock()
	select {
	case <-call.done:
		return call.out, call.err
	case <-ctx.Done():
		// The batch goes on without this caller, as a single forward's
		// request would have been cut off: its outcome is not known here.
		return nil, fmt.Errorf("forward: %w", ctx.Err())
	}
}

// sendForwards sends queued commands until the queue is empty.
func (n *Node) sendForwards() {
	b := &n.fwd
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		batch, rest := takeBatch(b.queue)
		b.queue = rest
		b.requests++
		b.mu.Unlock()
		if len(batch) == 1 {
			c := batch[0]
			c.out, c.err = n.forwardOne(n.ctx, c.addr, c.body)
			close(c.done)
			continue
		}
		n.forwardBatch(batch)
	}
}

// takeBatch takes the first queued command and those after it for the
// same leader, within the batch's bounds; the others keep their order.
func takeBatch(queue []*forwardCall) (batch, rest []*forwardCall) {
	addr, size := queue[0].addr, 0
	for _, c := range queue {
		if c.addr == addr && len(batch) < forwardBatchMax && (len(batch) == 0 || size+len(c.body) <= forwardBatchBytes) {
			batch = append(batch, c)
			size += len(c.body)
			continue
		}
		rest = append(rest, c)
	}
	return batch, rest
}

// forwardBatch sends batch in one request and hands every call its answer.
func (n *Node) forwardBatch(batch []*forwardCall) {
	answer := func(c *forwardCall, out []byte, err error) {
		c.out, c.err = out, err
		close(c.done)
	}
	answerAll := func(from int, err error) {
		for _, c := range batch[from:] {
			answer(c, nil, err)
		}
	}
	addr := batch[0].addr
	var body []byte
	for _, c := range batch {
		body = binary.AppendUvarint(body, uint64(len(c.body)))
		body = append(body, c.body...)
	}
	rctx, cancel := context.WithTimeout(n.ctx, applyTimeout+time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.internalURL(addr, "/internal/apply-batch"), bytes.NewReader(body))
	if err != nil {
		answerAll(0, fmt.Errorf("forward: %w", err))
		return
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Load().Do(req)
	if err != nil {
		if neverSent(err) {
			answerAll(0, fmt.Errorf("%w: forward to %s: %v", errRetry, addr, err))
		} else {
			answerAll(0, fmt.Errorf("%w: forward to %s: %v", ErrUnknownOutcome, addr, err))
		}
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case err != nil && resp.StatusCode == http.StatusOK:
		// Read as far as it came: the rest may have been applied.
	case err != nil:
		answerAll(0, fmt.Errorf("%w: read forwarded results: %v", ErrUnknownOutcome, err))
		return
	case resp.StatusCode == http.StatusNotFound:
		// A leader of an older build: the route is unknown, so nothing
		// was applied. Send these alone, and so the next for a while.
		n.fwd.mu.Lock()
		if n.fwd.legacy == nil {
			n.fwd.legacy = map[string]time.Time{}
		}
		n.fwd.legacy[addr] = time.Now().Add(legacyRecheck)
		n.fwd.mu.Unlock()
		var wg sync.WaitGroup
		for _, c := range batch {
			wg.Go(func() {
				out, err := n.forwardOne(n.ctx, addr, c.body)
				answer(c, out, err)
			})
		}
		wg.Wait()
		return
	case resp.StatusCode == http.StatusMisdirectedRequest:
		answerAll(0, fmt.Errorf("%w: %s is not the leader", errRetry, addr))
		return
	case resp.StatusCode != http.StatusOK:
		answerAll(0, fmt.Errorf("forward to %s: status %d: %s", addr, resp.StatusCode, data))
		return
	}
	for i, c := range batch {
		kind, out, code, msg, rest, ok := readBatchAnswer(data)
		if !ok {
			answerAll(i, fmt.Errorf("%w: forwarded results from %s end after %d of %d", ErrUnknownOutcome, addr, i, len(batch)))
			return
		}
		data = rest
		switch kind {
		case batchOK:
			answer(c, out, nil)
		case batchErr:
			answer(c, out, forwardedError(code, msg))
		case batchRetry:
			answer(c, nil, fmt.Errorf("%w: leader busy: %s", errRetry, msg))
		default:
			answer(c, nil, fmt.Errorf("%w: at leader: %s", ErrUnknownOutcome, msg))
		}
	}
}

// serveApplyBatch is POST /internal/apply-batch on the leader: it commits
// every command of the batch, side by side, and answers each in order.
func (n *Node) serveApplyBatch(w http.ResponseWriter, r *http.Request) {
	if n.fwd.refuseBatches.Load() {
		http.NotFound(w, r) // as an older build answers
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, forwardBatchBytes+forwardBatchMax*binary.MaxVarintLen64))
	if err != nil {
		http.Error(w, "bad batch", http.StatusBadRequest)
		return
	}
	var props []Proposal
	for len(body) > 0 {
		size, k := binary.Uvarint(body)
		if k <= 0 || size > uint64(len(body)-k) || len(props) == forwardBatchMax {
			http.Error(w, "bad batch", http.StatusBadRequest)
			return
		}
		p, ok := decodeForwarded(body[k : k+int(size)])
		if !ok {
			http.Error(w, "bad command", http.StatusBadRequest)
			return
		}
		props = append(props, p)
		body = body[k+int(size):]
	}
	if n.raft.State() != raft.Leader {
		http.Error(w, "not the leader", http.StatusMisdirectedRequest)
		return
	}
	type result struct {
		out []byte
		err error
	}
	results := make([]result, len(props))
	var wg sync.WaitGroup
	for i, p := range props {
		wg.Go(func() {
			// The follower reads its own replica: nothing to wait for here.
			out, _, err := n.commitOnLeader(p)
			results[i] = result{out, err}
		})
	}
	wg.Wait()
	var resp []byte
	for _, res := range results {
		resp = appendBatchAnswer(resp, res.out, res.err)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(resp)
}

// appendBatchAnswer writes one command's answer: its kind, then the
// result and error as length-prefixed fields (code, message, result).
func appendBatchAnswer(b, out []byte, err error) []byte {
	kind, code, msg := batchOK, "", ""
	switch {
	case err == nil:
	case errors.Is(err, errRetry):
		kind, msg, out = batchRetry, err.Error(), nil
	case errors.Is(err, ErrUnknownOutcome):
		kind, msg, out = batchUnknown, err.Error(), nil
	default:
		kind, code, msg = batchErr, errorCode(err), err.Error()
	}
	b = append(b, kind)
	for _, f := range [][]byte{[]byte(code), []byte(msg), out} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// readBatchAnswer reads one answer appendBatchAnswer wrote; false if the
// data ends or is malformed.
func readBatchAnswer(b []byte) (kind byte, out []byte, code, msg string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] > batchUnknown {
		return 0, nil, "", "", nil, false
	}
	kind, b = b[0], b[1:]
	var fields [3][]byte
	for i := range fields {
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return 0, nil, "", "", nil, false
		}
		fields[i], b = b[k:k+int(size)], b[k+int(size):]
	}
	return kind, fields[2], string(fields[0]), string(fields[1]), b, true
}
