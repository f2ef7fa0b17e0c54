package orders

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// A guest order that would certainly be rejected must not cost a Raft
// entry: one phone looping fresh keys and client ids would otherwise write
// to every box's SD card as fast as Raft allows. So before proposing, the
// handler answers from the local replica what Apply would surely answer
// (a known key's replay once caught up, cooldown, checkout lock, burst),
// and an in-memory limit per session and per remote address caps what
// still gets proposed.
// Apply stays authoritative: anything not answered here is decided there,
// and a local answer can only be a refusal the guest retries after
// Retry-After, or the replay of a result already committed.
//
// Local rejections leave no audit row each; they are counted and written
// as one aggregated row per (session, reason) and interval.

// CmdRejectionSummary carries aggregated local rejections (one audit row
// per entry). The number is far from the others to stay clear of new
// domain commands.
const CmdRejectionSummary raftfsm.CommandType = 60

// proposalLimit is how many guest order proposals one session, or one
// remote address, may make per window on one node that do not end in an
// admitted order (admitted ones are refunded: the burst window bounds
// them): more than a table of guests retrying at once, far fewer than a
// looping script.
const (
	proposalLimit  = 4
	proposalWindow = time.Second
	// rejectionFlushEvery bounds how often a node writes its aggregated
	// rejection rows (one command per interval, only when there are any).
	rejectionFlushEvery = 10 * time.Second
	// maxRejectionKeys bounds the aggregation map; beyond it, counts fold
	// into one row without a session.
	maxRejectionKeys = 1000
)

// preAdmit answers a guest order from the local replica when the answer is
// certain; ok reports that it answered. Otherwise the proposal is charged
// to the session and address; call refund when Apply admitted it.
func (s *Service) preAdmit(ctx context.Context, cmd placeOrderCmd, remote string) (r Result, answered bool, refund func()) {
	reject := func(status int, reason string, waitMs int64) (Result, bool, func()) {
		s.rejections.add(cmd.SessionID, reason)
		return Result{Status: status, Reason: reason, RetryAfterMs: waitMs}, true, func() {}
	}
	// The key and the windows in one look.
	var cached cachedResult
	var good bool
	g, fromMemory, err := s.lookAtGate(cmd)
	known, status, reason, wait, now := g.idemFound, g.status, g.reason, g.waitMs, g.now
	if known {
		// A key cached as a KV key comes before the windows (rows 5–6).
		cached, good = decodeCached(g.idem)
		status, reason, wait = 0, "", 0
	}
	if err == nil && !known {
		// An order of version 5 or later keeps its key in its row, and
		// the admission state knows every live one; its files only when
		// the memory is being built again.
		row, usable := g.row, fromMemory
		known = g.rowFound
		if !usable && s.admit != nil {
			row, known, usable = s.admit.keyReplay(s.node.FSM().Epoch(), cmd.SessionID, cmd.RequestID, now)
		}
		if !usable {
			err = s.query(func(db store.DB) error {
				var err error
				row, known, err = store.KeyReplay(db, cmd.SessionID, cmd.RequestID, now)
				return err
			})
		}
		cached, good = rowCached(row), known
	}
	// Rows 5–6 first: a key whose result is committed replays it (or is a
	// reuse with another cart) — never a window's refusal. But row 3 comes
	// before them, and the replica may not have applied a checkout made
	// through another box a moment ago, after which the cluster answers
	// every guest call 410. So catch up once (ReadIndex: a round trip, no
	// log entry) and judge the session again. A replica that cannot catch
	// up (no quorum) answers nothing: the resend is proposed, within the
	// limits below, and Apply decides.
	if err == nil && known {
		if closed, caughtUp := s.sessionClosedNow(ctx, cmd.SessionID); caughtUp {
			if closed {
				return reject(http.StatusGone, "SESSION_CLOSED", 0)
			}
			if good {
				if cached.Fingerprint != cmd.Fingerprint {
					return reject(http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", 0)
				}
				body := cached.Body
				body.IdempotentReplay = true
				b, err := json.Marshal(body)
				if err == nil {
					s.rejections.add(cmd.SessionID, "IDEMPOTENT_REPLAY")
					return Result{Status: http.StatusOK, Replay: true, Body: b}, true, func() {}
				}
			}
			return Result{}, false, func() {} // let Apply decide
		}
		// Not caught up: the key's own order may have set the windows
		// (its cooldown), so none of them refuses the resend here.
		reason = ""
	}
	// Rows 8–10, in Apply's order. A window seen here may already have been
	// lifted elsewhere (a checkout cancelled through another box a moment
	// ago): before refusing, the replica catches up with the leader once
	// (ReadIndex: a round trip, no log entry) and looks again.
	if err == nil && reason != "" {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.consistent(rctx)
		cancel()
		if err != nil {
			return reject(status, reason, wait)
		}
		g, _, err := s.lookAtGate(cmd)
		status, reason, wait = g.status, g.reason, g.waitMs
		if err == nil && reason != "" {
			return reject(status, reason, wait)
		}
	}
	// What is left is proposed, within the in-memory limits.
	wall := time.Now()
	keys := []string{"s:" + cmd.SessionID}
	// Loopback is this box itself (or a test's load generator), never a
	// phone on the Wi-Fi.
	if ip := net.ParseIP(remote); ip == nil || !ip.IsLoopback() {
		keys = append(keys, "a:"+remote)
	}
	for i, k := range keys {
		if wait, ok := s.proposals.take(k, wall); !ok {
			for _, taken := range keys[:i] {
				s.proposals.refund(taken, wall)
			}
			if i == 0 {
				return reject(http.StatusConflict, "SESSION_ORDER_IN_PROGRESS", wait.Milliseconds())
			}
			return reject(http.StatusTooManyRequests, "COOLDOWN_ACTIVE", wait.Milliseconds())
		}
	}
	return Result{}, false, func() {
		for _, k := range keys {
			s.proposals.refund(k, wall)
		}
	}
}

// sessionClosedNow catches the replica up with the leader and reports
// whether the session is closed by then; caughtUp is false when it could
// not (no quorum, or the replica did not apply in time).
func (s *Service) sessionClosedNow(ctx context.Context, sessionID string) (closed, caughtUp bool) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.consistent(rctx); err != nil {
		return false, false
	}
	sess, found, err := s.loadSession(sessionID)
	if err != nil || !found {
		return false, false
	}
	return sess.Status != store.SessionActive, true
}

// lookAtGate reads the gate for cmd from the admission memory, or, while
// that is being built or when the session is not active in it, the
// gate's keys in one read of the replica's KV (fromMemory false: the
// caller looks for the key in the rows).
func (s *Service) lookAtGate(cmd placeOrderCmd) (g gateLook, fromMemory bool, err error) {
	if s.admit != nil {
		if g, usable := s.admit.gateLook(s.node.FSM().Epoch(), cmd, s.node.FSMNow()); usable {
			return g, true, nil
		}
	}
	err = s.node.KV().Read(func(tx *kv.Tx) {
		g.now = tx.Now()
		if e, live := tx.Get(keyIdem(cmd.SessionID, cmd.RequestID)); live {
			g.idem, g.idemFound = e.Value, true
		}
		g.status, g.reason, g.waitMs = s.windowRefusal(tx, cmd)
	})
	return g, false, err
}

// windowRefusal is the first of rows 8–10 the local replica refuses with.
// The cooldown and the burst window are KV keys or (version 6) records
// the admission state holds; without a usable memory only the keys are
// seen here, and Apply judges the records.
func (s *Service) windowRefusal(tx *kv.Tx, cmd placeOrderCmd) (status int, reason string, waitMs int64) {
	now := tx.Now()
	var cooldown, burst recordEnd
	var cooldownLive, burstLive bool
	if s.admit != nil {
		cooldown, burst, cooldownLive, burstLive, _ = s.admit.recordWindows(s.node.FSM().Epoch(), cmd.ClientID, cmd.SessionID, now)
	}
	if e, ok := tx.Get(keyCooldown(cmd.ClientID)); ok || cooldownLive {
		end, _ := laterEnd(e, ok, cooldown, cooldownLive)
		return http.StatusTooManyRequests, "COOLDOWN_ACTIVE", end - now
	}
	if e, live := tx.Get(keySessionLock(cmd.SessionID)); live {
		return http.StatusConflict, "SESSION_BUSY", min(e.ExpiresAt-now, 5000)
	}
	if e, ok := tx.Get(keyBurst(cmd.SessionID)); ok || burstLive {
		end, _ := laterEnd(e, ok, burst, burstLive)
		return http.StatusConflict, "SESSION_ORDER_IN_PROGRESS", end - now
	}
	return 0, "", 0
}

// windowLimiter allows limit events per window per key (fixed windows,
// in memory, on this node). Idle keys are dropped as windows roll.
type windowLimiter struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	start  time.Time
	counts map[string]int
}

func (l *windowLimiter) take(key string, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil || now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start, l.counts = now, map[string]int{}
	}
	if l.counts[key] >= l.limit {
		return l.window - now.Sub(l.start), false
	}
	l.counts[key]++
	return 0, true
}

// refund gives back an event taken at taken (if its window is still on).
func (l *windowLimiter) refund(key string, taken time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts != nil && !taken.Before(l.start) && l.counts[key] > 0 {
		l.counts[key]--
	}
}

// rejectionCounts aggregates local rejections until the next flush.
type rejectionCounts struct {
	mu     sync.Mutex
	counts map[rejectionKey]int64
}

type rejectionKey struct{ SessionID, Reason string }

func (r *rejectionCounts) add(sessionID, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[rejectionKey]int64{}
	}
	k := rejectionKey{sessionID, reason}
	if _, seen := r.counts[k]; !seen && len(r.counts) >= maxRejectionKeys {
		k.SessionID = ""
	}
	r.counts[k]++
}

// take returns the counts so far in a stable order and starts afresh.
func (r *rejectionCounts) take() []rejectionRow {
	r.mu.Lock()
	counts := r.counts
	r.counts = nil
	r.mu.Unlock()
	rows := make([]rejectionRow, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, rejectionRow{SessionID: k.SessionID, Reason: k.Reason, Count: n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].SessionID != rows[j].SessionID {
			return rows[i].SessionID < rows[j].SessionID
		}
		return rows[i].Reason < rows[j].Reason
	})
	return rows
}

type rejectionRow struct {
	SessionID string `json:"sessionId,omitempty"`
	Reason    string `json:"reason"`
	Count     int64  `json:"count"`
}

type rejectionSummaryCmd struct {
	Node string         `json:"node"`
	Rows []rejectionRow `json:"rows"`
}

// applyRejectionSummary writes one audit row per aggregated rejection.
func applyRejectionSummary(ctx *raftfsm.ApplyContext, tx *kv.Tx, c rejectionSummaryCmd) ([]byte, error) {
	if len(c.Rows) > maxRejectionKeys+1 {
		return json.Marshal(Result{Status: http.StatusBadRequest, Reason: "INVALID_REQUEST"})
	}
	for _, r := range c.Rows {
		if r.Count < 1 || len(r.Reason) > 64 || len(r.SessionID) > 64 || !validText(r.Reason, 64, true) || !validText(r.SessionID, 64, false) {
			continue
		}
		a := store.Audit{At: ctx.WallTime, SessionID: r.SessionID, ReasonCode: r.Reason, Node: c.Node,
			IdempotentReplay: r.Reason == "IDEMPOTENT_REPLAY", Detail: "answered by " + c.Node + " before proposing, ×" + strconv.FormatInt(r.Count, 10)}
		if err := store.InsertAudit(ctx.DB, a); err != nil {
			return nil, err
		}
	}
	return json.Marshal(Result{Status: http.StatusOK})
}

// rejectionFlusher writes this node's aggregated rejections every
// rejectionFlushEvery, until the node stops.
func (s *Service) rejectionFlusher() {
	t := time.NewTicker(rejectionFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.node.Done():
			return
		case <-t.C:
		}
		s.FlushRejections(context.Background())
	}
}

// FlushRejections writes the aggregated local rejections now (one command).
func (s *Service) FlushRejections(ctx context.Context) error {
	rows := s.rejections.take()
	if len(rows) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.propose(ctx, CmdRejectionSummary, rejectionSummaryCmd{Node: s.cfg.NodeID, Rows: rows}, false)
	return err
}
