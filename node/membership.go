package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Membership: adding, removing and promoting boxes. A change runs on the
// leader (a follower forwards it over the internal channel) as one Raft
// configuration change; the new member's HTTP address is recorded in the
// replicated KV under member:{id} first, so every node can show it and
// send browsers to it (MemberHTTP, CORS).

// memberKeyPrefix holds member:{id} → HTTP address for members that are
// not in a node's configured peers.
const memberKeyPrefix = "member:"

// MemberError is a membership change refused for a reason the caller can
// fix; Status is the HTTP status and Code the reason code to answer with.
type MemberError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Msg    string `json:"message"`
}

func (e *MemberError) Error() string { return e.Code + ": " + e.Msg }

func memberErr(status int, code, format string, args ...any) *MemberError {
	return &MemberError{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

type memberOp struct {
	Op       string `json:"op"` // "add", "remove", "promote"
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr,omitempty"`
	HTTPAddr string `json:"httpAddr,omitempty"`
	Voter    bool   `json:"voter,omitempty"`
	Force    bool   `json:"force,omitempty"`
}

func (op memberOp) validate() error {
	if !idPattern.MatchString(op.ID) {
		return memberErr(http.StatusBadRequest, "INVALID_MEMBER", "id must match [A-Za-z0-9_-]{1,64}")
	}
	switch op.Op {
	case "add":
		if err := checkHostPort(op.RaftAddr); err != nil {
			return memberErr(http.StatusBadRequest, "INVALID_MEMBER", "raftAddr: %v", err)
		}
		if err := checkHostPort(op.HTTPAddr); err != nil {
			return memberErr(http.StatusBadRequest, "INVALID_MEMBER", "httpAddr: %v", err)
		}
	case "remove", "promote":
	default:
		return memberErr(http.StatusBadRequest, "INVALID_MEMBER", "unknown membership operation %q", op.Op)
	}
	return nil
}

// AddMember adds a box to the cluster, as a voter or a non-voter (which
// receives the log but does not count for quorum; promote it once it has
// caught up). The box must run with join = true (or otherwise not
// bootstrap); it catches up from the leader, by snapshot when the log has
// been compacted. Adding a member that is already there with the same
// address is not an error.
func (n *Node) AddMember(ctx context.Context, id, raftAddr, httpAddr string, voter bool) error {
	return n.changeMembers(ctx, memberOp{Op: "add", ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr, Voter: voter})
}

// RemoveMember takes a box out of the cluster (a dead box being replaced,
// or a box retired). It refuses to remove the last voter, and to remove a
// voter when the voters left that this leader can reach would not be a
// majority (use ForceRemoveMember to override that check).
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	return n.changeMembers(ctx, memberOp{Op: "remove", ID: id})
}

// ForceRemoveMember removes a member without the reachability check.
func (n *Node) ForceRemoveMember(ctx context.Context, id string) error {
	return n.changeMembers(ctx, memberOp{Op: "remove", ID: id, Force: true})
}

// PromoteMember makes a non-voter a voter; promoting a voter is a no-op.
func (n *Node) PromoteMember(ctx context.Context, id string) error {
	return n.changeMembers(ctx, memberOp{Op: "promote", ID: id})
}

// Members returns the current members as the cluster status shows them.
func (n *Node) Members() []MemberStatus { return n.Status().Nodes }

func (n *Node) changeMembers(ctx context.Context, op memberOp) error {
	if err := op.validate(); err != nil {
		return err
	}
	deadline := time.Now().Add(retryWindow)
	backoff := 10 * time.Millisecond
	tried := false
	for {
		var err error
		if n.raft.State() == raft.Leader {
			err = n.commitMembers(ctx, op)
		} else {
			err = n.forwardMembers(ctx, op)
		}
		var me *MemberError
		switch {
		case err == nil:
			return nil
		case tried && op.Op == "remove" && errors.As(err, &me) && me.Code == "MEMBER_NOT_FOUND":
			// An earlier attempt whose outcome was unknown did remove it.
			return nil
		case errors.Is(err, errRetry), errors.Is(err, ErrUnknownOutcome):
			// Every operation is idempotent: adding what is there, promoting
			// a voter and removing what is gone (above) succeed.
			tried = tried || errors.Is(err, ErrUnknownOutcome)
		default:
			return err
		}
		n.metrics.proposeRetries.Inc()
		if time.Now().After(deadline) {
			return ErrNoQuorum
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("membership: %w", ctx.Err())
		case <-time.After(backoff + rand.N(backoff)):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// commitMembers makes the change on the leader (Raft commits it).
func (n *Node) commitMembers(ctx context.Context, op memberOp) error {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("%w: read configuration: %v", errRetry, err)
	}
	conf, prev := cf.Configuration(), cf.Index()
	var cur *raft.Server
	voters := 0
	for i, s := range conf.Servers {
		if s.ID == raft.ServerID(op.ID) {
			cur = &conf.Servers[i]
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	var f raft.IndexFuture
	switch op.Op {
	case "add":
		for _, s := range conf.Servers {
			if s.ID != raft.ServerID(op.ID) && s.Address == raft.ServerAddress(op.RaftAddr) {
				return memberErr(http.StatusConflict, "ADDRESS_IN_USE", "member %s already uses raft address %s", s.ID, op.RaftAddr)
			}
		}
		if cur != nil {
			if cur.Address != raft.ServerAddress(op.RaftAddr) {
				return memberErr(http.StatusConflict, "MEMBER_EXISTS", "member %s exists with raft address %s; remove it first", op.ID, cur.Address)
			}
			if cur.Suffrage == raft.Voter && !op.Voter {
				return memberErr(http.StatusConflict, "MEMBER_EXISTS", "member %s is already a voter", op.ID)
			}
		}
		if e, ok, _ := n.kv.Get(memberKeyPrefix + op.ID); !ok || string(e.Value) != op.HTTPAddr {
			if err := n.kv.Put(ctx, memberKeyPrefix+op.ID, []byte(op.HTTPAddr), 0); err != nil {
				return err
			}
		}
		if cur != nil && (cur.Suffrage == raft.Voter || !op.Voter) {
			return nil
		}
		if op.Voter && n.fsm.FeatureLevel() > 0 {
			// A voter must apply the log at the store's feature level: a
			// new box joins as a non-voter first (then it may be asked over
			// the cluster port), and is made a voter once its build is
			// known to be new enough (featurelevel.go).
			wait := time.Duration(0) // a retry, or an existing non-voter: ask once
			if cur == nil {
				if err := n.await(n.raft.AddNonvoter(raft.ServerID(op.ID), raft.ServerAddress(op.RaftAddr), prev, applyTimeout), 0); err != nil {
					return membershipRaftErr(err)
				}
				wait = joinBuildWait
			}
			if err := n.checkVoterBuild(ctx, op.ID, op.RaftAddr, wait); err != nil {
				return err
			}
			if cf = n.raft.GetConfiguration(); cf.Error() != nil {
				return fmt.Errorf("%w: read configuration: %v", errRetry, cf.Error())
			}
			prev = cf.Index()
		}
		if op.Voter {
			f = n.raft.AddVoter(raft.ServerID(op.ID), raft.ServerAddress(op.RaftAddr), prev, applyTimeout)
		} else {
			f = n.raft.AddNonvoter(raft.ServerID(op.ID), raft.ServerAddress(op.RaftAddr), prev, applyTimeout)
		}
	case "promote":
		if cur == nil {
			return memberErr(http.StatusNotFound, "MEMBER_NOT_FOUND", "no member %s", op.ID)
		}
		if cur.Suffrage == raft.Voter {
			return nil
		}
		if err := n.checkVoterBuild(ctx, op.ID, string(cur.Address), 0); err != nil {
			return err
		}
		f = n.raft.AddVoter(cur.ID, cur.Address, prev, applyTimeout)
	case "remove":
		if cur == nil {
			return memberErr(http.StatusNotFound, "MEMBER_NOT_FOUND", "no member %s", op.ID)
		}
		if cur.Suffrage == raft.Voter {
			left := voters - 1
			if left == 0 {
				return memberErr(http.StatusConflict, "LAST_VOTER", "%s is the last voter", op.ID)
			}
			if !op.Force {
				var rest []raft.Server
				for _, s := range conf.Servers {
					if s.Suffrage == raft.Voter && s.ID != cur.ID {
						rest = append(rest, s)
					}
				}
				reach := n.countAnswering(ctx, rest)
				if reach*2 <= left {
					return memberErr(http.StatusConflict, "WOULD_LOSE_QUORUM",
						"removing %s leaves %d voters of which only %d answer: the cluster would stop taking orders", op.ID, left, reach)
				}
			}
		}
		f = n.raft.RemoveServer(cur.ID, prev, applyTimeout)
	}
	if err := n.await(f, 0); err != nil {
		return membershipRaftErr(err)
	}
	n.log.Info("membership changed", "op", op.Op, "member", op.ID, "raftAddr", op.RaftAddr, "voter", op.Voter, "index", f.Index())
	if op.Op == "remove" {
		n.denyRemoved(ctx, op.ID)
	}
	if _, known, _ := n.kv.Get(memberKeyPrefix + op.ID); op.Op == "remove" && known {
		// Tidy: the address of a removed member is of no more use. The
		// change is done either way.
		if _, err := n.kv.Delete(ctx, memberKeyPrefix+op.ID); err != nil {
			n.log.Warn("forget removed member's address", "member", op.ID, "error", err)
		}
	}
	return nil
}

func membershipRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrRaftShutdown), strings.Contains(err.Error(), "configuration changed since"):
		return fmt.Errorf("%w: %v", errRetry, err)
	default:
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
}

// forwardMembers sends the change to the leader's internal channel.
func (n *Node) forwardMembers(ctx context.Context, op memberOp) error {
	_, leaderAddr := n.LeaderID()
	if leaderAddr == "" {
		return fmt.Errorf("%w: no leader known", errRetry)
	}
	body, _ := json.Marshal(op)
	rctx, cancel := context.WithTimeout(ctx, 2*applyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.internalURL(leaderAddr, "/internal/members"), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("forward membership change: %w", err)
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Load().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("forward membership change: %w", ctx.Err())
		}
		return fmt.Errorf("%w: forward membership change to %s: %v", ErrUnknownOutcome, leaderAddr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusMisdirectedRequest:
		return fmt.Errorf("%w: %s is not the leader", errRetry, leaderAddr)
	case http.StatusServiceUnavailable:
		if resp.Header.Get(outcomeHdr) == "unknown" {
			return fmt.Errorf("%w: at leader: %s", ErrUnknownOutcome, data)
		}
		return fmt.Errorf("%w: leader busy: %s", errRetry, data)
	}
	var me MemberError
	if json.Unmarshal(data, &me) == nil && me.Code != "" {
		return &me
	}
	return fmt.Errorf("membership change at %s: status %d: %s", leaderAddr, resp.StatusCode, data)
}

// countAnswering asks each server over the internal channel (the Raft
// port) whether it is there, now: a dead box must not count, however
// recently it was seen.
func (n *Node) countAnswering(ctx context.Context, servers []raft.Server) int {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var count atomic.Int32
	for _, s := range servers {
		if string(s.ID) == n.cfg.NodeID {
			count.Add(1)
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(addr, "/internal/ping"), nil)
			if err != nil {
				return
			}
			req.Header.Set(secretHeader, n.cfg.ClusterSecret)
			resp, err := n.peerHTTP.Load().Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				count.Add(1)
			}
		}(string(s.Address))
	}
	wg.Wait()
	return int(count.Load())
}

// registerMembersInternal serves POST /internal/members on the leader and
// GET /internal/ping on every node.
func (n *Node) registerMembersInternal(mux *http.ServeMux) {
	mux.HandleFunc("GET /internal/ping", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, n.cfg.NodeID)
	})
	mux.HandleFunc("POST /internal/members", func(w http.ResponseWriter, r *http.Request) {
		var op memberOp
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&op); err != nil {
			http.Error(w, "bad membership change", http.StatusBadRequest)
			return
		}
		if err := op.validate(); err != nil {
			writeMemberErr(w, err.(*MemberError))
			return
		}
		if n.raft.State() != raft.Leader {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		err := n.commitMembers(r.Context(), op)
		var me *MemberError
		switch {
		case err == nil:
			w.WriteHeader(http.StatusOK)
		case errors.As(err, &me):
			writeMemberErr(w, me)
		case errors.Is(err, errRetry), errors.Is(err, ErrNoQuorum):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case errors.Is(err, ErrUnknownOutcome):
			w.Header().Set(outcomeHdr, "unknown")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

func writeMemberErr(w http.ResponseWriter, me *MemberError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(me.Status)
	json.NewEncoder(w).Encode(me)
}

// memberOrigin reports whether origin is the web address of a member added
// at run time (configured peers are allowed by the CORS list already).
func (n *Node) memberOrigin(origin string) bool {
	host, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		return false
	}
	entries, err := n.kv.List(memberKeyPrefix, 64)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if string(e.Value) == host {
			return true
		}
	}
	return false
}
