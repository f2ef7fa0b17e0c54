package setup

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
)

// MemberRoutes mounts what a member serves for setup on its HTTP(S)
// server: the cluster CA for tablets (/ca, /ca.crt, /ca.mobileconfig,
// /ca/qr.png; every box serves them), the progress of the setup this
// process ran (w may be nil), and NOT_IN_SETUP for every claim and wizard
// call: a member never drops back to setup mode.
func MemberRoutes(e *echo.Echo, tlsDir string, w *Wizard) {
	notInSetup := func(c echo.Context) error { return httpapi.Fail(c, http.StatusConflict, "NOT_IN_SETUP") }
	e.Any(claimPrefix+"/*", notInSetup)
	e.GET("/setup/api/progress", func(c echo.Context) error {
		if w == nil {
			return c.JSON(http.StatusOK, Progress{Job: Job{State: "member"}})
		}
		p := w.Progress()
		if p.State == JobIdle {
			p.State = "member"
		}
		return c.JSON(http.StatusOK, p.Worded(httpapi.English(c)))
	})
	e.Any("/setup/api/*", notInSetup)
	caRoutes(e, tlsDir)
}
