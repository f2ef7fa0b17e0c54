package orders

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"masterorder/node"
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

func (s *Service) clusterRoutes(e *echo.Echo) {
	staff := s.auth.Middleware()
	e.POST("/api/staff/cluster/members", s.addMember, staff, roleGuard)
	e.DELETE("/api/staff/cluster/members/:id", s.removeMember, staff, roleGuard)
	e.POST("/api/staff/cluster/members/:id/promote", s.promoteMember, staff, roleGuard)
	e.GET("/api/staff/backup", s.backup, staff, roleGuard)
}

type addMemberReq struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
	// Voter defaults to true (replacing a dead box); false adds a
	// non-voter to promote once it has caught up.
	Voter *bool `json:"voter"`
}

func (s *Service) addMember(c echo.Context) error {
	var req addMemberReq
	if err := decodeStrict(c, &req); err != nil {
		return s.badBody(c, err, "INVALID_MEMBER")
	}
	voter := req.Voter == nil || *req.Voter
	err := s.node.AddMember(c.Request().Context(), req.ID, req.RaftAddr, req.HTTPAddr, voter)
	return s.membersAnswer(c, err)
}

func (s *Service) removeMember(c echo.Context) error {
	force, _ := strconv.ParseBool(c.QueryParam("force"))
	var err error
	if force {
		err = s.node.ForceRemoveMember(c.Request().Context(), c.Param("id"))
	} else {
		err = s.node.RemoveMember(c.Request().Context(), c.Param("id"))
	}
	return s.membersAnswer(c, err)
}

func (s *Service) promoteMember(c echo.Context) error {
	return s.membersAnswer(c, s.node.PromoteMember(c.Request().Context(), c.Param("id")))
}

// membersAnswer answers a membership change with the members as this node
// sees them once it has caught up, or the reason it was refused.
func (s *Service) membersAnswer(c echo.Context, err error) error {
	var me *node.MemberError
	if errors.As(err, &me) {
		ja, ok := memberMessages[me.Code]
		if !ok {
			ja = "メンバーの変更ができません。"
		}
		return node.Fail(c, me.Status, me.Code, ja+"（"+me.Msg+"）", me.Msg, 0)
	}
	if err != nil {
		return s.failErr(c, err)
	}
	if err := s.consistent(c.Request().Context()); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": s.node.Members()})
}

var memberMessages = map[string]string{
	"INVALID_MEMBER":    "メンバーの指定が正しくありません。",
	"MEMBER_NOT_FOUND":  "そのメンバーはクラスタにいません。",
	"MEMBER_EXISTS":     "そのメンバーは別の設定ですでにクラスタにいます。",
	"ADDRESS_IN_USE":    "そのアドレスは別のメンバーが使っています。",
	"LAST_VOTER":        "最後の投票メンバーは外せません。",
	"WOULD_LOSE_QUORUM": "外すと過半数の端末が応答しなくなり、注文を受けられなくなります。",
}

// backup streams a consistent snapshot of the whole store (menus, stock,
// sessions, orders, audit, coordination keys), after catching up with
// everything committed. It streams a point-in-time copy at one index, so
// a reader that stops reading holds nothing of the live store.
func (s *Service) backup(c echo.Context) error {
	snap, err := s.node.CaptureBackup(c.Request().Context())
	if err != nil {
		return s.failErr(c, err)
	}
	defer snap.Close()
	h := c.Response().Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="masterorder-%s-%d.mosnap"`, s.cfg.ShopID, snap.Index))
	h.Set("Cache-Control", "no-store")
	h.Set(BackupIndexHeader, strconv.FormatUint(snap.Index, 10))
	h.Set("Trailer", BackupDigestTrailer+", "+BackupErrorTrailer)
	c.Response().WriteHeader(http.StatusOK)
	sum := sha256.New()
	if err := s.node.StreamCapture(c.Response(), snap, sum); err != nil {
		s.node.Logger().Warn("backup stream failed", "error", err)
		h.Set(BackupErrorTrailer, err.Error())
		return nil
	}
	h.Set(BackupDigestTrailer, hex.EncodeToString(sum.Sum(nil)))
	return nil
}
