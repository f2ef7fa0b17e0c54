package orders

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/store"
)

// The console's time zone setting (manager): GET /api/staff/time-zone
// says which zone the store uses and where it comes from; PUT sets it for
// every box (timezone.go).

func (s *Service) timeZoneRoutes(staff *echo.Group) {
	staff.GET("/time-zone", s.getTimeZone)
	staff.PUT("/time-zone", s.putTimeZone)
}

// timeZoneView is GET /api/staff/time-zone.
type timeZoneView struct {
	TimeZone *string `json:"timeZone"` // null: the box's own zone, which has no name
	Source   string  `json:"source"`
	SetAt    *string `json:"setAt"` // when the console set it
	// FileTimeZone is [shop] time_zone of this box's file, the wizard's
	// (null when unset): what the store falls back to.
	FileTimeZone *string `json:"fileTimeZone"`
}

func (s *Service) timeZoneView() timeZoneView {
	_, name, source := s.storeZone()
	v := timeZoneView{TimeZone: nonZero(name), Source: source, FileTimeZone: nonZero(s.cfg.Shop.TimeZone)}
	if c := s.zoneSetting(); c != nil && source == zoneFromConsole && c.SetAt > 0 {
		v.SetAt = nonZero(store.FormatTime(c.SetAt))
	}
	return v
}

func (s *Service) getTimeZone(c echo.Context) error {
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, s.timeZoneView())
}

// putTimeZone checks the name by the boxes' rule (LoadZone, the same as
// [shop] time_zone's), replicates it and answers the view once this box
// applied it.
func (s *Service) putTimeZone(c echo.Context) error {
	var in struct {
		TimeZone string `json:"timeZone"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	if _, err := LoadZone(in.TimeZone); err != nil {
		return s.failField(c, http.StatusBadRequest, "INVALID_TIME_ZONE", "timeZone")
	}
	ctx := c.Request().Context()
	// Idempotent: the same zone applied twice changes nothing more.
	r, err := s.propose(ctx, CmdShopTimeZone, shopTimeZoneCmd{Zone: in.TimeZone, SetAt: s.node.ClusterWall().UnixMilli()}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	if err := s.consistent(ctx); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, s.timeZoneView())
}
