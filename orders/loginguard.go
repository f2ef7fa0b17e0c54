package orders

import (
	"context"
	"time"

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
