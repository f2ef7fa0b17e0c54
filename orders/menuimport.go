package orders

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/kv"
	"masterorder/node"
	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// A whole menu at once: the staff page reads a spreadsheet's CSV, shows
// what it would do, and on the owner's word sends every item in one
// request, committed as one command, so the menu takes all of them or none
// (POST /api/staff/menu: the menu collection takes a list of items; a
// path of its own under /menu/ would be a menu id).

// CmdImportMenu upserts a list of menu items in one Apply.
const CmdImportMenu raftfsm.CommandType = 110

// maxImportItems bounds one import (a menu is tens of items), and
// maxImportBody its request (a full item is well under 2 KiB).
const (
	maxImportItems = 500
	maxImportBody  = 1 << 20
)

func registerMenuImport(tab commandTable) {
	register(tab, CmdImportMenu, "orders.importMenu", applyImportMenu)
}

// importMenuCmd is the items, each as PUT /api/staff/menu/{menuId} makes
// it (its content a patch: what the request did not name stays).
type importMenuCmd struct {
	Items []upsertMenuCmd `json:"items"`
}

func (c importMenuCmd) valid() bool {
	if len(c.Items) == 0 || len(c.Items) > maxImportItems {
		return false
	}
	seen := map[string]bool{}
	for _, it := range c.Items {
		if !it.valid() || seen[it.Item.MenuID] {
			return false
		}
		seen[it.Item.MenuID] = true
	}
	return true
}

// applyImportMenu writes every item as applyUpsertMenu does one, then the
// catalog version once: the menu changes at this index as a whole.
func applyImportMenu(ctx *raftfsm.ApplyContext, tx *kv.Tx, c importMenuCmd) ([]byte, error) {
	for _, it := range c.Items {
		if err := store.UpsertMenuItem(ctx.DB, it.Item); err != nil {
			return nil, err
		}
		if it.Content != nil {
			if err := store.PatchMenuContent(ctx.DB, it.Item.MenuID, *it.Content); err != nil {
				return nil, err
			}
		}
	}
	if err := menuChanged(ctx, tx); err != nil {
		return nil, err
	}
	items := make([]store.MenuItem, 0, len(c.Items))
	for _, it := range c.Items {
		item, _, err := store.GetMenuItem(ctx.DB, it.Item.MenuID)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	ctx.Emit("menu.updated", nil)
	return ok(map[string]any{"items": items})
}

// importInput is the request: each item a PUT body with its menuId.
type importInput struct {
	Items []menuInput `json:"items"`
}

func (s *Service) importMenu(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxImportBody+1))
	if err != nil {
		return s.failErr(c, err)
	}
	if len(body) > maxImportBody {
		return httpapi.Fail(c, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE")
	}
	var in importInput
	if err := httpapi.DecodeStrict(body, &in); err != nil || len(in.Items) == 0 || len(in.Items) > maxImportItems {
		return s.failField(c, http.StatusBadRequest, "INVALID_MENU_ITEM", "items")
	}
	cmd := importMenuCmd{Items: make([]upsertMenuCmd, len(in.Items))}
	seen := map[string]bool{}
	for i, m := range in.Items {
		at := fmt.Sprintf("items[%d]", i)
		if !admission.ValidID(m.MenuID) || seen[m.MenuID] {
			return s.failField(c, http.StatusBadRequest, "INVALID_MENU_ITEM", at+".menuId")
		}
		seen[m.MenuID] = true
		one, field := menuCommand(m.MenuID, m)
		if field == "." {
			field = ""
		}
		if field != "" || one.Item.MenuID == "" {
			return s.failField(c, http.StatusBadRequest, "INVALID_MENU_ITEM", at+field)
		}
		cmd.Items[i] = one
	}
	r, err := s.propose(c.Request().Context(), CmdImportMenu, cmd, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) menuImportRoutes(staff *echo.Group) {
	staff.POST("/menu", s.importMenu)
	node.AllowLargeBody(http.MethodPost, "/api/staff/menu")
}
