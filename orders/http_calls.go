package orders

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/store"
)

// callRoutes registers guest calls, day close and reports.
func (s *Service) callRoutes(staff, guest *echo.Group) {
	guest.POST("/calls", s.guestCall)
	staff.GET("/calls", s.listCalls)
	staff.POST("/calls/:callId/done", s.callDone)
	staff.POST("/days/close", s.closeDay)
	staff.GET("/reports/sales", s.salesReport)
}

// guestCall: the body first (a bad kind is 400 whoever asks), then the
// session and PIN like every guest call, then one command decides.
func (s *Service) guestCall(c echo.Context) error {
	var in struct {
		Kind string `json:"kind"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	if !validCallKind(in.Kind) {
		return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
	}
	sess, good, err := s.guestGate(c)
	if !good {
		return err
	}
	// Idempotent: applied twice, the second answers the open call.
	r, err := s.propose(c.Request().Context(), CmdGuestCall, guestCallCmd{SessionID: sess.SessionID, Kind: in.Kind}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) listCalls(c echo.Context) error {
	status := c.QueryParam("status")
	if status != "" && status != store.CallOpen && status != store.CallDone {
		return s.fail(c, http.StatusBadRequest, "INVALID_STATUS", 0, nil)
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var calls []store.Call
	if err := s.query(func(db store.DB) (err error) { calls, err = store.ListCalls(db, status, "", 500); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"calls": calls})
}

func (s *Service) callDone(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("callId"), 10, 64)
	if err != nil || id < 1 {
		return s.fail(c, http.StatusNotFound, "CALL_NOT_FOUND", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdCallDone, callDoneCmd{CallID: id}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}
