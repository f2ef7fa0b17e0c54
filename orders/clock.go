package orders

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// A manager sets the time in one tap. When no source gave the boxes the
// time (a new store, no internet, every box cut), the console shows "the
// boxes' clock says … — is that right?" and its button sends the tablet's
// own clock. The time travels in one command, so Apply stays
// deterministic (it only records the tap in the audit); each box moves
// its own clock after it applied it (publish → node.ClockFromManager),
// forward only: a clock never goes back. A tablet whose clock is up to
// clockConfirmBehind earlier than the boxes' confirms their time (the
// warning clears, no clock moves); one further behind is refused
// (CLOCK_BEHIND): its own clock is wrong, or the boxes' is ahead, and
// moving the boxes back would reorder receipts and tickets.

// CmdSetClock carries a manager's time to every box.
const CmdSetClock raftfsm.CommandType = 120

const eventClockSet = "clock.set"

// clockConfirmBehind is how much earlier than the boxes' time a tablet
// may be and still confirm it.
const clockConfirmBehind = 5 * time.Minute

// The range a manager's time must be in: no later than the year 2100, no
// earlier than this software.
var (
	clockEarliest = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clockLatest   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

type setClockCmd struct {
	// Time is the manager's tablet's clock (Unix ms) when it sent it.
	Time int64 `json:"time"`
	// Was is the boxes' time (ClusterWall) on the box that took the tap.
	Was  int64  `json:"was"`
	Node string `json:"node"`
}

func (c setClockCmd) valid() bool {
	t := time.UnixMilli(c.Time)
	return !t.Before(clockEarliest) && t.Before(clockLatest) && c.Was >= 0 && c.Node != ""
}

type clockSetEvent struct {
	Time  int64 `json:"time"`
	Stamp int64 `json:"stamp"` // FSM time of the command
}

func registerClock(tab commandTable) {
	register(tab, CmdSetClock, "orders.setClock", applySetClock)
}

func applySetClock(ctx *raftfsm.ApplyContext, _ *kv.Tx, c setClockCmd) ([]byte, error) {
	detail := "to " + time.UnixMilli(c.Time).UTC().Format(time.RFC3339) + " (the boxes said " + time.UnixMilli(c.Was).UTC().Format(time.RFC3339) + ")"
	if err := store.InsertAudit(ctx.DB, store.Audit{At: c.Time, ReasonCode: "CLOCK_SET", Node: c.Node, Detail: detail}); err != nil {
		return nil, err
	}
	ctx.Emit(eventClockSet, mustJSON(clockSetEvent{Time: c.Time, Stamp: ctx.Now}))
	return ok(struct{}{})
}

// clockSet is the observer after apply: this box moves its clock.
func (s *Service) clockSet(e raftfsm.Event) {
	var ev clockSetEvent
	if json.Unmarshal(e.Data, &ev) != nil {
		return
	}
	s.node.ClockFromManager(ev.Time, ev.Stamp, e.Index)
}

// setClock is POST /api/staff/clock (manager): {"time": the tablet's
// clock in Unix ms}. It answers the box's clock afterwards.
func (s *Service) setClock(c echo.Context) error {
	var in struct {
		Time *int64 `json:"time"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil || in.Time == nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	cmd := setClockCmd{Time: *in.Time, Was: s.node.ClusterWall().UnixMilli(), Node: s.cfg.NodeID}
	if !cmd.valid() {
		return s.fail(c, http.StatusBadRequest, "CLOCK_IMPLAUSIBLE", 0, nil)
	}
	if time.UnixMilli(cmd.Was).Sub(time.UnixMilli(cmd.Time)) > clockConfirmBehind {
		return s.fail(c, http.StatusConflict, "CLOCK_BEHIND", 0, nil)
	}
	// Not idempotent: a second apply would be a second (later) tap, which
	// is harmless, but an unknown outcome is answered, not retried.
	handled := s.node.ManagerClockIndex()
	r, err := s.propose(c.Request().Context(), CmdSetClock, cmd, false)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	// This box applies it (and moves its clock) before it answers.
	if err := s.consistent(c.Request().Context()); err != nil {
		return s.failErr(c, err)
	}
	// The FSM wakes a reader at the index before its listeners run: wait
	// (briefly) for this box's clock to have taken the tap too.
	for deadline := time.Now().Add(2 * time.Second); s.node.ManagerClockIndex() <= handled && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return c.JSON(http.StatusOK, s.node.ClockStatus())
}
