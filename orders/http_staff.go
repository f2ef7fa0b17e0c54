package orders

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/staffauth"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// decodeStrict reads the request body into v (admission.DecodeStrict).
func decodeStrict(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	return httpapi.DecodeStrict(body, v)
}

// tooLarge tells a body-limit error apart (413) from bad JSON (400).
func (s *Service) badBody(c echo.Context, err error, code string) error {
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
		return s.fail(c, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", 0, nil)
	}
	return s.fail(c, http.StatusBadRequest, code, 0, nil)
}

func remoteHost(c echo.Context) string {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		return c.Request().RemoteAddr
	}
	return host
}

// ---- login ----

func (s *Service) login(c echo.Context) error {
	addr := remoteHost(c)
	var req struct {
		Password *string `json:"password"`
	}
	if err := httpapi.DecodeBody(c, &req); err != nil || req.Password == nil || len(*req.Password) > 200 {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	if wait, locked := s.loginLocked(staffauth.Key(addr)); locked {
		return s.fail(c, http.StatusTooManyRequests, "LOGIN_LOCKED", wait, nil)
	}
	// The attempt counts from here, before bcrypt runs (parallel guesses
	// cannot all slip past the limit).
	ok, wait, end := s.limiter.Begin(addr)
	if !ok {
		return s.fail(c, http.StatusTooManyRequests, "LOGIN_LOCKED", wait, nil)
	}
	role, busy := s.checkStaffPassword(*req.Password)
	if busy {
		end(staffauth.Abandoned)
		return s.fail(c, http.StatusTooManyRequests, "LOGIN_LOCKED", time.Second, nil)
	}
	if role == 0 {
		end(staffauth.Failed)
		s.recordLoginFailure(c.Request().Context(), staffauth.Key(addr))
		if ok, wait := s.limiter.Allow(addr); !ok { // this failure locked the address
			return s.fail(c, http.StatusTooManyRequests, "LOGIN_LOCKED", wait, nil)
		}
		return s.fail(c, http.StatusUnauthorized, "INVALID_PASSWORD", 0, nil)
	}
	end(staffauth.Succeeded)
	// Tokens expire on FSM time: catch up first so this node's clock is
	// the cluster's.
	if err := s.consistent(c.Request().Context()); err != nil {
		return s.failErr(c, err)
	}
	ttl := s.cfg.Staff.TokenTTL.Duration
	if role == staffauth.RoleKitchen {
		ttl = s.cfg.Staff.KitchenTokenTTL.Duration
	}
	token, _, expires := s.auth.Issuer().IssueRole(role, ttl)
	if err := s.auth.SetLoginCookies(c, token, expires); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"token": token, "role": role.String(), "expiresAt": expires.UTC().Format(time.RFC3339)})
}

// checkStaffPassword returns the role whose password this is (0: none);
// busy when the node's bcrypt slots stayed full.
func (s *Service) checkStaffPassword(pw string) (staffauth.Role, bool) {
	for _, h := range []struct {
		hash string
		role staffauth.Role
	}{{s.passwordHash, staffauth.RoleManager}, {s.kitchenHash, staffauth.RoleKitchen}} {
		if h.hash == "" {
			continue
		}
		match, busy := s.bcrypt.Check(h.hash, pw, loginBcryptWait)
		if busy {
			return 0, true
		}
		if match {
			return h.role, false
		}
	}
	return 0, false
}

func (s *Service) logout(c echo.Context) error {
	cl, ok := staffauth.ClaimsFrom(c)
	if !ok {
		return s.fail(c, http.StatusUnauthorized, "UNAUTHORIZED", 0, nil)
	}
	ttl := time.Until(cl.ExpiresAt)
	if fsm := time.UnixMilli(s.node.FSMNow()); cl.ExpiresAt.After(fsm) {
		ttl = cl.ExpiresAt.Sub(fsm)
	}
	r, err := s.propose(c.Request().Context(), CmdRevokeToken, revokeTokenCmd{TokenID: cl.ID, TTLms: ttl.Milliseconds() + 60_000}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	s.auth.ClearCookies(c)
	return c.NoContent(http.StatusNoContent)
}

// ---- menu and stock ----

type toppingInput struct {
	ToppingID string `json:"toppingId"`
	Name      string `json:"name"`
	NameEn    string `json:"nameEn"`
	Price     *int64 `json:"price"`
}

type menuInput struct {
	Name      *string        `json:"name"`
	NameEn    string         `json:"nameEn"`
	Category  string         `json:"category"`
	Price     *int64         `json:"price"`
	Available *bool          `json:"available"`
	SortOrder int64          `json:"sortOrder"`
	Toppings  []toppingInput `json:"toppings"`
	// menuId in the body is accepted when it matches the path.
	MenuID string `json:"menuId"`

	contentInput   // names, description(En), allergens: http_content.go
	menuLinesInput // station, optionGroups (lines.go)
}

const (
	maxNameLen  = 100
	maxPriceYen = 1_000_000
	maxStock    = 1_000_000
)

func validText(s string, maxLen int, required bool) bool {
	if required && strings.TrimSpace(s) == "" {
		return false
	}
	return utf8.ValidString(s) && utf8.RuneCountInString(s) <= maxLen && !strings.ContainsAny(s, "\x00\r\n")
}

func (m menuInput) item(menuID string) (store.MenuItem, bool) {
	if m.Name == nil || m.Price == nil || !validText(*m.Name, maxNameLen, true) || !validText(m.NameEn, maxNameLen, false) ||
		!validText(m.Category, 64, false) || *m.Price < 0 || *m.Price > maxPriceYen || len(m.Toppings) > 20 ||
		(m.MenuID != "" && m.MenuID != menuID) || m.SortOrder < -1_000_000 || m.SortOrder > 1_000_000 {
		return store.MenuItem{}, false
	}
	item := store.MenuItem{MenuID: menuID, Name: *m.Name, NameEn: m.NameEn, Category: m.Category, Price: *m.Price,
		Available: m.Available == nil || *m.Available, SortOrder: m.SortOrder, Toppings: []store.Topping{}}
	seen := map[string]bool{}
	for _, t := range m.Toppings {
		if !admission.ValidID(t.ToppingID) || seen[t.ToppingID] || t.ToppingID == menuID || !validText(t.Name, maxNameLen, true) ||
			!validText(t.NameEn, maxNameLen, false) || t.Price == nil || *t.Price < 0 || *t.Price > maxPriceYen {
			return store.MenuItem{}, false
		}
		seen[t.ToppingID] = true
		item.Toppings = append(item.Toppings, store.Topping{ToppingID: t.ToppingID, Name: t.Name, NameEn: t.NameEn, Price: *t.Price})
	}
	return item, true
}

// menuCommand is the command a PUT body makes of item menuID, or the
// field that is wrong, after a ".": "." alone for the item as a whole
// (the import prefixes the item's place in its list).
func menuCommand(menuID string, in menuInput) (upsertMenuCmd, string) {
	item, ok := in.item(menuID)
	if !ok {
		return upsertMenuCmd{}, "."
	}
	if field := in.applyLines(&item); field != "" {
		return upsertMenuCmd{}, "." + field
	}
	content, field, ok := in.contentInput.patch()
	if !ok {
		return upsertMenuCmd{}, "." + field
	}
	return upsertMenuCmd{Item: item, Content: content}, ""
}

func (s *Service) putMenu(c echo.Context) error {
	menuID := c.Param("menuId")
	if !admission.ValidID(menuID) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	var in menuInput
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_MENU_ITEM")
	}
	cmd, field := menuCommand(menuID, in)
	if field == "." {
		return s.fail(c, http.StatusBadRequest, "INVALID_MENU_ITEM", 0, nil)
	}
	if field != "" {
		return s.failField(c, http.StatusBadRequest, "INVALID_MENU_ITEM", field[1:])
	}
	item, content := cmd.Item, cmd.Content
	if isKitchen(c) {
		// The kitchen toggles sold-out; names, prices and toppings are the
		// manager's.
		var cur store.MenuItem
		var found bool
		if err := s.query(func(db store.DB) (err error) { cur, found, err = store.GetMenuItem(db, menuID); return }); err != nil {
			return s.failErr(c, err)
		}
		item.MenuContent = cur.MenuContent
		if content != nil {
			item.MenuContent = content.Apply(cur.MenuContent)
		}
		if !found || !sameExceptAvailable(cur, item) {
			return staffauth.Forbid(c)
		}
	}
	item.MenuContent = store.MenuContent{} // the command's content is the patch
	r, err := s.propose(c.Request().Context(), CmdUpsertMenu, upsertMenuCmd{Item: item, Content: content}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) listMenu(c echo.Context) error {
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var items []store.MenuItem
	if err := s.query(func(db store.DB) (err error) { items, err = store.ListMenu(db); return }); err != nil {
		return s.failErr(c, err)
	}
	return s.menuAnswer(c, items)
}

func (s *Service) putStock(c echo.Context) error {
	sku := c.Param("sku")
	if !admission.ValidID(sku) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	var in struct {
		Quantity json.RawMessage `json:"quantity"`
		SKU      string          `json:"sku"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_STOCK")
	}
	if len(in.Quantity) == 0 || (in.SKU != "" && in.SKU != sku) {
		return s.fail(c, http.StatusBadRequest, "INVALID_STOCK", 0, nil)
	}
	var qty *int64
	if string(in.Quantity) != "null" {
		n, err := strconv.ParseInt(string(in.Quantity), 10, 64)
		if err != nil || n < 0 || n > maxStock {
			return s.fail(c, http.StatusBadRequest, "INVALID_STOCK", 0, nil)
		}
		qty = &n
	}
	if isKitchen(c) && qty != nil && *qty != 0 {
		// The kitchen marks sold out (0) or back (untracked); counting
		// stock is the manager's.
		return staffauth.Forbid(c)
	}
	// Idempotent by construction: the request id makes a second commit of
	// this command (a forward retried after an unknown outcome) a no-op.
	r, err := s.propose(c.Request().Context(), CmdSetStock, setStockCmd{SKU: sku, Quantity: qty, RequestID: newRequestID()}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) listStock(c echo.Context) error {
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var levels []store.StockLevel
	if err := s.query(func(db store.DB) (err error) { levels, err = store.ListStock(db); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"stock": levels})
}

// ---- sessions and checkout ----

type staffSession struct {
	store.Session
	PIN      string `json:"pin"`
	GuestURL string `json:"guestUrl"`
	// GuestFallbackURL: the same page at this box's address (guestFallbackURL).
	GuestFallbackURL string `json:"guestFallbackUrl,omitempty"`
}

func (s *Service) openSession(c echo.Context) error {
	var in struct {
		TableID string `json:"tableId"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_TABLE")
	}
	if !admission.ValidID(in.TableID) {
		return s.fail(c, http.StatusBadRequest, "INVALID_TABLE", 0, nil)
	}
	cmd := openSessionCmd{SessionID: newSessionID(), TableID: in.TableID, PIN: newPIN()}
	r, err := s.propose(c.Request().Context(), CmdOpenSession, cmd, false)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	var opened sessionOpened
	if err := json.Unmarshal(r.Body, &opened); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, s.openedAnswer(c, opened))
}

// openedAnswer is a session just opened or given a new PIN, as the staff
// screen shows it: its guest page, and the fallback address when there is
// one.
func (s *Service) openedAnswer(c echo.Context, o sessionOpened) map[string]any {
	m := map[string]any{"sessionId": o.SessionID, "tableId": o.TableID, "pin": o.PIN, "status": o.Status, "guestUrl": s.guestURL(c, o.SessionID)}
	if u := s.guestFallbackURL(o.SessionID); u != "" {
		m["guestFallbackUrl"] = u
	}
	return m
}

func (s *Service) listSessions(c echo.Context) error {
	status := c.QueryParam("status")
	if status != "" && status != store.SessionActive && status != store.SessionClosed {
		return s.fail(c, http.StatusBadRequest, "INVALID_STATUS", 0, nil)
	}
	limit, ok := parseLimit(c)
	if !ok {
		return s.fail(c, http.StatusBadRequest, "INVALID_LIMIT", 0, nil)
	}
	if c.QueryParam("limit") == "" {
		limit = 200
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var list []store.Session
	if err := s.query(func(db store.DB) (err error) { list, err = store.ListSessions(db, status, limit); return }); err != nil {
		return s.failErr(c, err)
	}
	out := make([]staffSession, 0, len(list))
	for _, sess := range list {
		out = append(out, staffSession{Session: sess, PIN: sess.PIN, GuestURL: s.guestURL(c, sess.SessionID), GuestFallbackURL: s.guestFallbackURL(sess.SessionID)})
	}
	return c.JSON(http.StatusOK, map[string]any{"sessions": out})
}

func validSessionID(id string) bool { return len(id) >= 16 && len(id) <= 64 && admission.ValidID(id) }

func (s *Service) checkoutStep(t raftfsm.CommandType) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Param("id")
		if !validSessionID(id) {
			return s.fail(c, http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
		}
		rate := int64(s.cfg.Shop.TaxRate())
		cmd := checkoutCmd{SessionID: id, Node: s.cfg.NodeID, RequestID: newRequestID(), TaxRatePercent: &rate}
		if t == CmdCheckoutBegin {
			cmd.LockTTLms = s.cfg.Admission.CheckoutLockTTL.Milliseconds()
		}
		if t == CmdCheckout {
			body, err := io.ReadAll(c.Request().Body)
			if err != nil {
				return httpapi.BadBody(c, err, "INVALID_REQUEST")
			}
			if len(bytes.TrimSpace(body)) > 0 {
				var in struct {
					Payment *string `json:"payment"`
				}
				if err := httpapi.DecodeStrict(body, &in); err != nil || in.Payment != nil && (*in.Payment == "" || !validPayment(*in.Payment)) {
					return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
				}
				if in.Payment != nil {
					cmd.Payment = *in.Payment
				}
			}
		}
		// Every step carries its request id, so retrying any of them after
		// an unknown outcome applies it once.
		r, err := s.propose(c.Request().Context(), t, cmd, true)
		if err != nil {
			return s.failErr(c, err)
		}
		return s.respond(c, r)
	}
}

// ---- orders ----

func (s *Service) staffOrder(c echo.Context) error {
	sid := c.QueryParam("sessionId")
	return s.placeOrder(c, sid, "staff")
}

func (s *Service) patchOrder(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("orderId"), 10, 64)
	if err != nil || id < 1 || id > 1<<31-1 {
		return s.fail(c, http.StatusNotFound, "ORDER_NOT_FOUND", 0, nil)
	}
	var in struct {
		Status string `json:"status"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_STATUS")
	}
	switch in.Status {
	case store.StatusAccepted, store.StatusCooking, store.StatusReady, store.StatusServed, store.StatusCancelled:
	default:
		return s.fail(c, http.StatusBadRequest, "INVALID_STATUS", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdSetOrderStatus, setOrderStatusCmd{OrderID: id, Status: in.Status, Node: s.cfg.NodeID}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// ---- audit and locks ----

func (s *Service) listAudit(c echo.Context) error {
	limit, ok := parseLimit(c)
	if !ok {
		return s.fail(c, http.StatusBadRequest, "INVALID_LIMIT", 0, nil)
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var entries []store.AuditEntry
	if err := s.query(func(db store.DB) (err error) { entries, err = store.ListAudit(db, limit); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": entries})
}

type lockView struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	ExpiresAt string `json:"expiresAt"`
	Revision  uint64 `json:"revision"`
}

func validKey(k string) bool { return printable(k, kv.MaxKeyLen) }

func (s *Service) listLocks(c echo.Context) error {
	prefix := c.QueryParam("prefix")
	if prefix == "" {
		prefix = prefixLock
	}
	if !validKey(prefix) {
		return s.fail(c, http.StatusBadRequest, "INVALID_KEY", 0, nil)
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	entries, err := s.node.KV().List(prefix, 1000)
	if err != nil {
		return s.failErr(c, err)
	}
	if entries, err = s.withRecordBursts(entries, prefix, 1000); err != nil {
		return s.failErr(c, err)
	}
	// Expiry is FSM time; show it on this box's wall clock.
	now, wall := s.node.FSMNow(), time.Now()
	out := make([]lockView, 0, len(entries))
	for _, e := range entries {
		v := lockView{Key: e.Key, Value: shownValue(e.Key, e.Value), Revision: e.Revision}
		if e.ExpiresAt != 0 {
			v.ExpiresAt = wall.Add(time.Duration(e.ExpiresAt-now) * time.Millisecond).UTC().Format(time.RFC3339)
		}
		out = append(out, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"locks": out})
}

// withRecordBursts adds to a listing under prefix the burst windows held
// in window records (placeOrder 6, windowrecords.go) as the burst:{session}
// keys they replace: the later end where a key and a record name the same
// session.
func (s *Service) withRecordBursts(entries []kv.Entry, prefix string, limit int) ([]kv.Entry, error) {
	if !strings.HasPrefix(prefixBurst, prefix) && !strings.HasPrefix(prefix, prefixBurst) {
		return entries, nil
	}
	var bursts []kv.Entry
	usable := false
	if s.admit != nil {
		bursts, usable = s.admit.recordBurstLocks(s.node.FSM().Epoch(), s.node.FSMNow())
	}
	if !usable {
		if err := s.node.KV().Read(func(tx *kv.Tx) { bursts = loadWindowRecords(tx).burstLocks(tx.Now()) }); err != nil {
			return nil, err
		}
	}
	byKey := make(map[string]int, len(entries))
	for i, e := range entries {
		byKey[e.Key] = i
	}
	for _, b := range bursts {
		if !strings.HasPrefix(b.Key, prefix) {
			continue
		}
		if i, ok := byKey[b.Key]; ok {
			if old := entries[i]; old.ExpiresAt != 0 && b.ExpiresAt > old.ExpiresAt {
				entries[i] = b
			}
			continue
		}
		entries = append(entries, b)
	}
	slices.SortFunc(entries, func(a, b kv.Entry) int { return strings.Compare(a.Key, b.Key) })
	if len(entries) > limit {
		entries = entries[:limit]
	}
	return entries, nil
}

func (s *Service) releaseLock(c echo.Context) error {
	key, err := url.PathUnescape(c.Param("key"))
	if err != nil || !validKey(key) || !releasableKey(key) {
		return s.fail(c, http.StatusBadRequest, "INVALID_KEY", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdForceRelease, forceReleaseCmd{Key: key, Node: s.cfg.NodeID}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}
