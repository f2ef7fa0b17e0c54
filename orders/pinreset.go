package orders

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Staff's one tap for a table under a PIN attack: "unlock table / new
// PIN". The session gets a fresh PIN (the old one, and every device
// credential made from it, stops working) and its session-wide lockout and
// failure count are cleared. The seated guests type the new PIN from the
// staff console or a fresh QR card.

// CmdResetPIN replaces a session's PIN (far from the other numbers to
// stay clear of new domain commands).
const CmdResetPIN raftfsm.CommandType = 62

type resetPINCmd struct {
	SessionID string `json:"sessionId"`
	PIN       string `json:"pin"`
	Node      string `json:"node"`
}

func applyResetPIN(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c resetPINCmd
	if out, good := decodePayload(payload, &c); !good {
		return out, nil
	}
	if !validSessionID(c.SessionID) || len(c.PIN) != 4 {
		return reject(400, "INVALID_REQUEST")
	}
	sess, exists, err := store.GetSession(ctx.DB, c.SessionID)
	if err != nil {
		return nil, err
	}
	if !exists {
		return reject(404, "SESSION_NOT_FOUND")
	}
	if sess.Status != store.SessionActive {
		return reject(410, "SESSION_CLOSED")
	}
	if _, err := ctx.DB.Exec(`UPDATE sessions SET pin = ? WHERE session_id = ?`, c.PIN, c.SessionID); err != nil {
		return nil, err
	}
	t := kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	for _, k := range []string{keyPINLock("session", c.SessionID), keyPINFail("session", c.SessionID)} {
		if _, live := t.Get(k); live {
			if _, err := t.Delete(k); err != nil {
				return nil, err
			}
		}
	}
	if err := store.InsertAudit(ctx.DB, store.Audit{At: ctx.WallTime, SessionID: c.SessionID, ReasonCode: "PIN_RESET", Node: c.Node}); err != nil {
		return nil, err
	}
	return ok(sessionOpened{SessionID: c.SessionID, TableID: sess.TableID, PIN: c.PIN, Status: sess.Status})
}

// resetPIN is POST /api/staff/sessions/{id}/pin.
func (s *Service) resetPIN(c echo.Context) error {
	id := c.Param("id")
	if !validSessionID(id) {
		return s.fail(c, http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdResetPIN, resetPINCmd{SessionID: id, PIN: newPIN(), Node: s.cfg.NodeID}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	var out sessionOpened
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"sessionId": out.SessionID, "tableId": out.TableID, "pin": out.PIN,
		"status": out.Status, "guestUrl": s.guestURL(c, out.SessionID)})
}
