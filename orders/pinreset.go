package orders

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

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
	return c.JSON(http.StatusOK, s.openedAnswer(c, out))
}
