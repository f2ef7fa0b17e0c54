package orders

import (
	"encoding/json"
	"net/http"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Guest-call and day-close commands. Numbered apart from the 4x block so
// branches adding commands side by side do not collide.
const (
	CmdGuestCall raftfsm.CommandType = 70
	CmdCallDone  raftfsm.CommandType = 71
	CmdCloseDay  raftfsm.CommandType = 72
)

// callGapMs: at most one new call per session per 30 s of FSM time.
const callGapMs = 30 * 1000

// validCallKind: the three buttons of the guest app.
func validCallKind(k string) bool { return k == "staff" || k == "bill" || k == "water" }

type guestCallCmd struct {
	SessionID string `json:"sessionId"`
	Kind      string `json:"kind"`
}

func (c guestCallCmd) valid() bool { return validSessionID(c.SessionID) && validCallKind(c.Kind) }

type callDoneCmd struct {
	CallID int64 `json:"callId"`
}

func (c callDoneCmd) valid() bool { return c.CallID > 0 }

// registerCalls adds the call and day commands (called from registerTable).
func registerCalls(tab commandTable) {
	register(tab, CmdGuestCall, "orders.guestCall", applyGuestCall)
	register(tab, CmdCallDone, "orders.callDone", applyCallDone)
	register(tab, CmdCloseDay, "orders.closeDay", applyCloseDay)
}

// applyGuestCall decides a guest's call: a repeat of an open kind answers
// the open call (a double tap is not a second call), otherwise a new call
// is refused within callGapMs of the session's last one.
func applyGuestCall(ctx *raftfsm.ApplyContext, tx *kv.Tx, c guestCallCmd) ([]byte, error) {
	s, out, err := activeSession(ctx, c.SessionID)
	if out != nil || err != nil {
		return out, err
	}
	if open, found, err := store.OpenCallOfKind(ctx.DB, c.SessionID, c.Kind); err != nil {
		return nil, err
	} else if found {
		return ok(open)
	}
	if e, live := tx.Get(keyCallGap(c.SessionID)); live {
		return json.Marshal(Result{Status: http.StatusTooManyRequests, Reason: "CALL_TOO_SOON", RetryAfterMs: e.ExpiresAt - ctx.Now})
	}
	call, err := store.InsertCall(ctx.DB, c.SessionID, s.TableID, c.Kind, ctx.WallTime)
	if err != nil {
		return nil, err
	}
	if err := tx.Put(keyCallGap(c.SessionID), nil, msDuration(callGapMs)); err != nil {
		return nil, err
	}
	ctx.Emit("call.created", mustJSON(callEvent{Type: "call.created", Call: call}))
	return ok(call)
}

// applyCallDone marks a call done; done again answers it unchanged.
func applyCallDone(ctx *raftfsm.ApplyContext, tx *kv.Tx, c callDoneCmd) ([]byte, error) {
	call, found, err := store.GetCall(ctx.DB, c.CallID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "CALL_NOT_FOUND")
	}
	if call.Status == store.CallDone {
		return ok(call)
	}
	if err := closeCall(ctx, call); err != nil {
		return nil, err
	}
	call.Status = store.CallDone
	return ok(call)
}

// closeCall marks one open call done and tells the screens.
func closeCall(ctx *raftfsm.ApplyContext, call store.Call) error {
	if err := store.SetCallDone(ctx.DB, call.CallID, ctx.WallTime); err != nil {
		return err
	}
	call.Status = store.CallDone
	ctx.Emit("call.done", mustJSON(callEvent{Type: "call.done", Call: call}))
	return nil
}

// closeSessionCalls closes a session's open calls (at checkout: the table
// is paid, nobody needs to walk over any more).
func closeSessionCalls(ctx *raftfsm.ApplyContext, sessionID string) error {
	open, err := store.ListCalls(ctx.DB, store.CallOpen, sessionID, 100)
	if err != nil {
		return err
	}
	for _, call := range open {
		if err := closeCall(ctx, call); err != nil {
			return err
		}
	}
	return nil
}

type callEvent struct {
	Type string     `json:"type"`
	Call store.Call `json:"call"`
}

// ---- day close ----

type closeDayCmd struct {
	// Label is the business date (YYYY-MM-DD) the proposer computed from
	// its wall clock in the store's zone (reports.go businessDate): Apply
	// knows no time zone.
	Label string `json:"label"`
	Force bool   `json:"force,omitempty"`
}

func (c closeDayCmd) valid() bool { return validDate(c.Label) }

// DayClosed is the recorded boundary of one business day.
type DayClosed struct {
	Day          int64  `json:"day"`
	Label        string `json:"label"`
	ClosedIndex  uint64 `json:"closedIndex"`
	ClosedAt     string `json:"closedAt"`
	Forced       bool   `json:"forced"`
	OpenSessions int64  `json:"openSessions"`
}

// applyCloseDay records the end of the business day at this index: the
// day's orders are those with seq after the previous close, up to here.
func applyCloseDay(ctx *raftfsm.ApplyContext, tx *kv.Tx, c closeDayCmd) ([]byte, error) {
	open, err := store.CountActiveSessions(ctx.DB)
	if err != nil {
		return nil, err
	}
	if open > 0 && !c.Force {
		return reject(http.StatusConflict, "SESSIONS_OPEN")
	}
	d, err := store.InsertDayClose(ctx.DB, c.Label, ctx.Index, ctx.Now, ctx.WallTime, c.Force)
	if err != nil {
		return nil, err
	}
	return ok(DayClosed{Day: d.Day, Label: d.Label, ClosedIndex: d.ClosedIndex, ClosedAt: store.FormatTime(d.ClosedAt),
		Forced: c.Force, OpenSessions: open})
}
