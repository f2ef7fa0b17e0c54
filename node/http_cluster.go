package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
)

// Cluster operations for staff: membership changes and backups.

// Trailers of GET /api/staff/backup: a backup is streamed (its size is not
// known up front), so the digest at the end is what tells a complete
// download from a cut one.
const (
	BackupDigestTrailer = "X-MasterOrder-Backup-Sha256"
	BackupErrorTrailer  = "X-MasterOrder-Backup-Error"
	BackupIndexHeader   = "X-MasterOrder-Applied-Index"
)

// ClusterRoutes registers the staff's cluster operations on staff, the
// /api/staff group behind the domain's staff authentication and roles
// (the domain owns tokens).
func (n *Node) ClusterRoutes(staff *echo.Group) {
	staff.POST("/cluster/members", n.addMember)
	staff.DELETE("/cluster/members/:id", n.removeMember)
	staff.POST("/cluster/members/:id/promote", n.promoteMember)
	staff.GET("/backup", n.backup)
	staff.POST("/backups", n.makeBackup)
	staff.GET("/backups/:file", n.downloadBackup)
	n.extrasMu.Lock()
	more := n.staffRoutes
	n.extrasMu.Unlock()
	for _, r := range more {
		r(staff)
	}
}

// AddStaffRoutes adds routes to the staff group ClusterRoutes mounts
// (growing and healing from the console, package setup). Call it before
// the domain attaches.
func (n *Node) AddStaffRoutes(fn func(staff *echo.Group)) {
	n.extrasMu.Lock()
	n.staffRoutes = append(n.staffRoutes, fn)
	n.extrasMu.Unlock()
}

type addMemberReq struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
	// Voter defaults to true (replacing a dead box); false adds a
	// non-voter to promote once it has caught up.
	Voter *bool `json:"voter"`
}

func (n *Node) addMember(c echo.Context) error {
	var req addMemberReq
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.BadBody(c, err, "INVALID_MEMBER")
	}
	voter := req.Voter == nil || *req.Voter
	err := n.AddMember(c.Request().Context(), req.ID, req.RaftAddr, req.HTTPAddr, voter)
	return n.membersAnswer(c, err)
}

func (n *Node) removeMember(c echo.Context) error {
	force, _ := strconv.ParseBool(c.QueryParam("force"))
	var err error
	if force {
		err = n.ForceRemoveMember(c.Request().Context(), c.Param("id"))
	} else {
		err = n.RemoveMember(c.Request().Context(), c.Param("id"))
	}
	return n.membersAnswer(c, err)
}

func (n *Node) promoteMember(c echo.Context) error {
	return n.membersAnswer(c, n.PromoteMember(c.Request().Context(), c.Param("id")))
}

// membersAnswer answers a membership change with the members as this node
// sees them once it has caught up, or the reason it was refused.
func (n *Node) membersAnswer(c echo.Context, err error) error {
	var me *MemberError
	if errors.As(err, &me) {
		return httpapi.Write(c, httpapi.Refusal{Status: me.Status, Code: me.Code, Detail: me.Msg})
	}
	if err != nil {
		return n.FailErr(c, err)
	}
	if err := n.ConsistentRead(c.Request().Context()); err != nil {
		return n.FailErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": n.Members()})
}

// backup streams a consistent snapshot of the whole store (menus, stock,
// sessions, orders, audit, coordination keys), after catching up with
// everything committed. It streams a point-in-time copy at one index, so
// a reader that stops reading holds nothing of the live store.
func (n *Node) backup(c echo.Context) error {
	snap, err := n.CaptureBackup(c.Request().Context())
	if err != nil {
		return n.FailErr(c, err)
	}
	defer snap.Close()
	h := c.Response().Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="masterorder-%s-%d.mosnap"`, n.cfg.ShopID, snap.Index))
	h.Set("Cache-Control", "no-store")
	h.Set(BackupIndexHeader, strconv.FormatUint(snap.Index, 10))
	h.Set("Trailer", BackupDigestTrailer+", "+BackupErrorTrailer)
	c.Response().WriteHeader(http.StatusOK)
	sum := sha256.New()
	if err := n.StreamCapture(c.Response(), snap, sum); err != nil {
		n.log.Warn("backup stream failed", "error", err)
		h.Set(BackupErrorTrailer, err.Error())
		return nil
	}
	h.Set(BackupDigestTrailer, hex.EncodeToString(sum.Sum(nil)))
	return nil
}
