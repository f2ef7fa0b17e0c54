package orders

import (
	"context"
	"time"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Wrong staff passwords are also counted cluster-wide (switching boxes
// gains nothing), per address, and against a budget for the whole store:
// once the store has seen loginBudget failures in the window, an address
// with any failure gets no more tries until the window lapses, so a
// script spread over many addresses still cannot brute-force.
const (
	CmdLoginFailure raftfsm.CommandType = 61

	loginAddrLimit  = 10
	loginBudget     = 100
	loginWindowMs   = 10 * 60 * 1000
	loginLockMs     = 10 * 60 * 1000
	loginBcryptWait = 3 * time.Second
)

func keyLoginFail(addrKey string) string { return "loginfail:" + addrKey }
func keyLoginLock(addrKey string) string { return "loginlock:" + addrKey }

const keyLoginBudget = "loginlock:budget"

type loginFailureCmd struct {
	Addr string `json:"addr"`
	Node string `json:"node"`
}

func applyLoginFailure(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c loginFailureCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if !validText(c.Addr, 64, true) {
		return ok(struct{}{})
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	n, err := bumpCounter(t, keyLoginFail(c.Addr), loginWindowMs)
	if err != nil {
		return nil, err
	}
	if n >= loginAddrLimit {
		if err := t.Put(keyLoginLock(c.Addr), nil, msDuration(loginLockMs)); err != nil {
			return nil, err
		}
	}
	all, err := bumpCounter(t, "loginfail:all", loginWindowMs)
	if err != nil {
		return nil, err
	}
	if all >= loginBudget {
		if err := t.Put(keyLoginBudget, nil, msDuration(loginWindowMs)); err != nil {
			return nil, err
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, ReasonCode: "INVALID_PASSWORD", Node: c.Node, Detail: "from " + c.Addr}); err != nil {
		return nil, err
	}
	return ok(struct{}{})
}

// loginLocked reads the cluster-wide lock for an address from the local
// replica.
func (s *Service) loginLocked(addrKey string) (time.Duration, bool) {
	kvc := s.node.KV()
	now := s.node.FSMNow()
	if e, live, err := kvc.Get(keyLoginLock(addrKey)); err == nil && live {
		return msDuration(e.ExpiresAt - now), true
	}
	if e, live, err := kvc.Get(keyLoginBudget); err == nil && live {
		if _, failed, _ := kvc.Get(keyLoginFail(addrKey)); failed {
			return msDuration(e.ExpiresAt - now), true
		}
	}
	return 0, false
}

// recordLoginFailure replicates a wrong password (best effort: the local
// limiter already counted it).
func (s *Service) recordLoginFailure(ctx context.Context, addrKey string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s.propose(ctx, CmdLoginFailure, loginFailureCmd{Addr: addrKey, Node: s.cfg.NodeID}, false)
}
