package node

// Both ends of the internal channel's /internal/apply: a follower forwards
// a proposal to the leader, which commits it and answers the result.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

const (
	secretHeader = "X-MasterOrder-Cluster-Secret"
	applyErrHdr  = "X-MasterOrder-Apply-Error"
	// applyErrCodeHdr names a known error so the follower returns the
	// same sentinel the leader saw (errors.Is answers alike on both).
	applyErrCodeHdr = "X-MasterOrder-Apply-Error-Code"
	outcomeHdr      = "X-MasterOrder-Outcome"
)

// forwardHeader precedes a forwarded command's payload on the wire.
type forwardHeader struct {
	Type    raftfsm.CommandType
	Version uint8
	Flags   raftfsm.Flags
}

const forwardHeaderLen = 3

func (h forwardHeader) encode(payload []byte) []byte {
	body := make([]byte, forwardHeaderLen+len(payload))
	body[0], body[1], body[2] = byte(h.Type), h.Version, byte(h.Flags)
	copy(body[forwardHeaderLen:], payload)
	return body
}

// decodeForwarded reads a forwarded proposal; false if body is too short.
func decodeForwarded(body []byte) (Proposal, bool) {
	if len(body) < forwardHeaderLen {
		return Proposal{}, false
	}
	h := forwardHeader{Type: raftfsm.CommandType(body[0]), Version: body[1], Flags: raftfsm.Flags(body[2])}
	return Proposal{Type: h.Type, Version: h.Version, Flags: h.Flags, Payload: body[forwardHeaderLen:]}, true
}

// forwardedErrs are the errors a command's result can carry whose
// identity a caller may test with errors.Is.
var forwardedErrs = []struct {
	code string
	err  error
}{
	{"disk_full", ErrDiskFull},
	{"paused", raftfsm.ErrPaused},
	{"halted", ErrHalted},
	{"no_quorum", ErrNoQuorum},
	{"unknown_outcome", ErrUnknownOutcome},
	{"bad_command", raftfsm.ErrBadCommand},
	{"newer_format", raftfsm.ErrNewerFormat},
	{"unknown_command", raftfsm.ErrUnknownCommand},
}

// errorCode is err's code in forwardedErrs, "" if none matches.
func errorCode(err error) string {
	for _, f := range forwardedErrs {
		if errors.Is(err, f.err) {
			return f.code
		}
	}
	return ""
}

// remoteError is an error the leader answered: its message as the leader
// wrote it, and the sentinel its code names (nil for an unknown code).
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

func forwardedError(code, msg string) error {
	e := &remoteError{msg: msg}
	for _, f := range forwardedErrs {
		if f.code == code {
			e.is = f.err
		}
	}
	return e
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
	body := forwardHeader{Type: p.Type, Version: p.Version, Flags: p.Flags}.encode(p.Payload)
	return n.forwardQueued(ctx, leaderAddr, body) // forwardbatch.go
}

// forwardOne sends one encoded command to the leader's /internal/apply.
func (n *Node) forwardOne(ctx context.Context, leaderAddr string, body []byte) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, applyTimeout+time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.internalURL(leaderAddr, "/internal/apply"), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Load().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// Cut off (this box shutting down, or the caller gone) after
			// the request may have left: it may have reached the leader.
			// A 500 here was a guest's answer during a rolling update.
			return nil, fmt.Errorf("%w: forward cut off: %v", ErrUnknownOutcome, ctx.Err())
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
			return data, forwardedError(resp.Header.Get(applyErrCodeHdr), msg)
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
		p, ok := decodeForwarded(body)
		if err != nil || !ok {
			http.Error(w, "bad command", http.StatusBadRequest)
			return
		}
		if n.raft.State() != raft.Leader {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		out, _, err := n.commitOnLeader(p) // the follower reads its own replica: nothing to wait for here
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
			if code := errorCode(err); code != "" {
				w.Header().Set(applyErrCodeHdr, code)
			}
		}
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	})
	mux.HandleFunc("POST /internal/apply-batch", n.serveApplyBatch) // forwardbatch.go
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
	mux.HandleFunc("GET /internal/disk", n.serveDisk)         // disk.go
	n.extrasMu.Lock()
	for pattern, h := range n.internalRoutes { // internalroutes.go
		mux.Handle(pattern, h)
	}
	n.extrasMu.Unlock()
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

// internalURL addresses a peer's internal channel on its raft port.
func (n *Node) internalURL(raftAddr, path string) string {
	return "https://" + raftAddr + path
}
