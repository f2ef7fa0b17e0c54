package update

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/node"
)

// The console's calls (manager only):
//
//	GET  /api/staff/update          Overview: each box's version and update state, the offered bundle, the rollout
//	POST /api/staff/update/check    read the release index; a newer bundle is downloaded in the background → 202 Staged
//	POST /api/staff/update/bundle   upload a bundle (application/octet-stream) → 200 Staged
//	POST /api/staff/update/start    {"confirmDowngrade":bool} → 202 Record
//
// and the internal channel's (box.go): the leader's install request, a
// box's state, and the bundle a box fetches from the one holding it.

// Overview is the Boxes page's update part.
type Overview struct {
	// Version is what the box answering runs.
	Version string      `json:"version"`
	Boxes   []BoxReport `json:"boxes"`
	Offered Staged      `json:"offered"`
	Rollout *Record     `json:"rollout"`
	// ReleaseIndex: a release index is configured (the console offers
	// "Look for a new version").
	ReleaseIndex bool `json:"releaseIndex"`
}

// Routes mounts the console's calls on the staff group (New does, through
// the node's staff routes).
func (b *Box) Routes(staff *echo.Group) {
	node.AllowLargeBody(http.MethodPost, "/api/staff/update/bundle")
	staff.GET("/update", b.handleOverview)
	staff.POST("/update/check", b.handleCheck)
	staff.POST("/update/bundle", b.handleUpload)
	staff.POST("/update/start", b.handleStart)
}

// Overview is the update part of the Boxes page, worded.
func (b *Box) Overview(c echo.Context) Overview {
	en := httpapi.English(c)
	o := Overview{Version: b.version, Boxes: b.Reports(c.Request().Context()), Offered: b.Staged(), ReleaseIndex: b.cfg.ReleaseIndexURL != ""}
	for i := range o.Boxes {
		o.Boxes[i].Reason = o.Boxes[i].Reason.worded(en)
	}
	o.Offered.Reason = o.Offered.Reason.worded(en)
	if r, err := b.Rollout(); err == nil && r != nil {
		r.Reason = r.Reason.worded(en)
		o.Rollout = r
	}
	return o
}

func (r Reason) worded(english bool) Reason {
	r.Message = ""
	if r.Error != "" {
		r.Message = httpapi.Message(r.Error, english)
	}
	return r
}

func (b *Box) handleOverview(c echo.Context) error {
	return c.JSON(http.StatusOK, b.Overview(c))
}

func (b *Box) handleCheck(c echo.Context) error {
	s, err := b.Check(c.Request().Context())
	if err != nil {
		return b.fail(c, err)
	}
	s.Reason = s.Reason.worded(httpapi.English(c))
	return c.JSON(http.StatusAccepted, s)
}

func (b *Box) handleUpload(c echo.Context) error {
	r := c.Request()
	rc := http.NewResponseController(c.Response())
	// A bundle takes minutes over Wi-Fi: the body's deadline slides, so
	// only a stalled upload is cut off.
	s, err := b.Upload(r.Context(), r.Body, max(r.ContentLength, 0), func() { rc.SetReadDeadline(time.Now().Add(node.BodyReadTimeout)) })
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		return b.fail(c, err)
	}
	return c.JSON(http.StatusOK, s)
}

type startRequest struct {
	ConfirmDowngrade bool `json:"confirmDowngrade"`
}

func (b *Box) handleStart(c echo.Context) error {
	var req startRequest
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	r, err := b.Start(c.Request().Context(), req.ConfirmDowngrade)
	if err != nil {
		return b.fail(c, err)
	}
	return c.JSON(http.StatusAccepted, r)
}

// fail answers a refusal with its code, anything else through the node
// (no quorum: 503 with Retry-After).
func (b *Box) fail(c echo.Context, err error) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return b.n.FailErr(c, err)
	}
	status := http.StatusConflict
	switch r.Code {
	case CodeUnsigned, CodeWrongKey, CodeCorrupt, CodeWrongBoard:
		status = http.StatusUnprocessableEntity
	case CodeTooLarge:
		status = http.StatusRequestEntityTooLarge
	}
	return httpapi.Write(c, httpapi.Refusal{Status: status, Code: r.Code, Details: r.Detail})
}
