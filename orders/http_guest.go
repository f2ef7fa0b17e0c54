package orders

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/admission"
	"masterorder/orders/store"
)

// guestGate checks the session and its PIN (row 3 of the decision table)
// for every guest call: unknown → 404, locked out → 429 PIN_LOCKED,
// closed → 410, wrong PIN → 401 (counted cluster-wide).
func (s *Service) guestGate(c echo.Context) (store.Session, bool, error) {
	return s.sessionGate(c, s.loadSession)
}

// sessionGate is guestGate with the session read by load: the files
// (loadSession), or for an order the admission state when it can answer
// (orderSession, admitsession.go), with the same answers.
func (s *Service) sessionGate(c echo.Context, load func(id string) (store.Session, bool, error)) (store.Session, bool, error) {
	id := c.Param("id")
	if !validSessionID(id) {
		return store.Session{}, false, s.fail(c, http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
	}
	if c.Request().Method == http.MethodGet {
		// Reads answer what the cluster knows, not this box's lag: a
		// session closed or opened through another box a moment ago.
		// (An order re-checks the session inside Apply instead.) Without
		// a quorum, the replica as it is (flagged stale).
		if err := s.readReplica(c); err != nil {
			return store.Session{}, false, s.failErr(c, err)
		}
	}
	sess, found, err := load(id)
	if err != nil {
		return sess, false, s.failErr(c, err)
	}
	if !found && c.Request().Method != http.MethodGet {
		// The session may have been opened a moment ago through another
		// node: look again after catching up before saying 404.
		if err := s.consistent(c.Request().Context()); err != nil {
			return sess, false, s.failErr(c, err)
		}
		if sess, found, err = load(id); err != nil {
			return sess, false, s.failErr(c, err)
		}
	}
	if !found {
		return sess, false, s.fail(c, http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
	}
	// A device that already entered the right PIN passes on its session
	// credential, through any PIN lockout (pinguard.go).
	if s.validCredential(sess, c.Request().Header.Get(headerCredential)) {
		if sess.Status != store.SessionActive {
			return sess, false, s.fail(c, http.StatusGone, "SESSION_CLOSED", 0, nil)
		}
		return sess, true, nil
	}
	client, addr := pinClient(c), pinAddr(c)
	// Lockouts are cluster-wide and must hold against concurrent guesses
	// on any node (pinguard.go).
	v := s.pinJudge(c.Request().Context(), client, addr, sess, c.Request().Header.Get("X-Session-PIN"))
	switch {
	case v.locked > 0:
		return sess, false, s.fail(c, http.StatusTooManyRequests, "PIN_LOCKED", v.locked, nil)
	case v.closed:
		return sess, false, s.fail(c, http.StatusGone, "SESSION_CLOSED", 0, nil)
	case v.right:
		c.Response().Header().Set(headerCredential, s.sessionCredential(sess.SessionID, sess.PIN))
	default:
		defer v.release()
		if _, err := s.propose(c.Request().Context(), CmdPINFailure, pinFailureCmd{SessionID: id, Client: client, Addr: addr, Node: s.cfg.NodeID}, false); err != nil {
			return sess, false, s.failErr(c, err)
		}
		// Our replica counts this failure before the guard forgets it.
		s.consistent(c.Request().Context())
		return sess, false, s.fail(c, http.StatusUnauthorized, "INVALID_PIN", 0, nil)
	}
	return sess, true, nil
}

// pinClient names who is guessing: the client id when it is well formed,
// else the remote address (never a header a guest could vary freely).
func pinClient(c echo.Context) string {
	if id := c.Request().Header.Get("X-MasterOrder-Client-Id"); admission.ValidClientID(id) {
		return id
	}
	return "addr-" + remoteHost(c)
}

// pinAddr is the remote address wrong PINs are also counted under; ""
// for loopback (the box itself, a test's load generator).
func pinAddr(c echo.Context) string {
	h := remoteHost(c)
	if ip := net.ParseIP(h); ip == nil || ip.IsLoopback() {
		return ""
	}
	return "addr-" + h
}

func (s *Service) guestSession(c echo.Context) error {
	sess, ok, err := s.guestGate(c)
	if !ok {
		return err
	}
	out := map[string]string{"sessionId": sess.SessionID, "tableId": sess.TableID, "status": sess.Status}
	if s.cfg.Shop.Name != "" {
		out["shopName"] = s.cfg.Shop.Name // the guest page's header
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Service) guestMenu(c echo.Context) error {
	if _, ok, err := s.guestGate(c); !ok {
		return err
	}
	var items []store.MenuItem
	if err := s.query(func(db store.DB) (err error) { items, err = store.ListMenu(db); return }); err != nil {
		return s.failErr(c, err)
	}
	return s.menuAnswer(c, items)
}

func (s *Service) guestOrders(c echo.Context) error {
	limit, ok := parseLimit(c)
	if !ok {
		return s.fail(c, http.StatusBadRequest, "INVALID_LIMIT", 0, nil)
	}
	var reqID string
	if raw := c.QueryParam("requestId"); raw != "" {
		k, valid := admission.ParseIdempotencyKey(raw)
		if !valid {
			return s.fail(c, http.StatusBadRequest, "INVALID_IDEMPOTENCY_KEY", 0, nil)
		}
		reqID = k
	}
	// guestGate's read barrier also makes this read-your-writes: an
	// acknowledged order is in the history on any node.
	sess, ok, err := s.guestGate(c)
	if !ok {
		return err
	}
	var list []store.Order
	if err := s.query(func(db store.DB) (err error) {
		list, err = store.SessionOrders(db, sess.SessionID, limit, reqID)
		return
	}); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"orders": list})
}

func (s *Service) guestOrder(c echo.Context) error {
	return s.placeOrder(c, c.Param("id"), "guest")
}

// placeOrder is the order path: validate the request (rows 1–4 of the
// decision table), propose one command, and answer with its result.
// Everything from row 5 on is decided inside Apply.
func (s *Service) placeOrder(c echo.Context, sessionID, source string) error {
	h := c.Request().Header
	guest := source == "guest"
	// Row 1: headers.
	var key string
	if raw := h.Get("Idempotency-Key"); raw != "" || guest {
		k, ok := admission.ParseIdempotencyKey(raw)
		if !ok {
			return s.fail(c, http.StatusBadRequest, "INVALID_IDEMPOTENCY_KEY", 0, nil)
		}
		key = k
	}
	clientID := h.Get("X-MasterOrder-Client-Id")
	if guest && !admission.ValidClientID(clientID) {
		return s.fail(c, http.StatusBadRequest, "INVALID_CLIENT_ID", 0, nil)
	}
	if !guest && clientID != "" && !admission.ValidClientID(clientID) {
		clientID = ""
	}
	// Row 2: the body.
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return httpapi.BadBody(c, err, "INVALID_ORDER")
	}
	req, err := admission.DecodeOrder(body)
	if err != nil {
		return s.failField(c, http.StatusBadRequest, "INVALID_ORDER", admission.FieldOf(err))
	}
	lines := admission.Normalize(req.Items)
	verdict, err := s.catalogKnows(c.Request().Context(), lines, req.Items)
	if err != nil {
		return s.failErr(c, err)
	}
	if !verdict.empty && !verdict.known {
		return s.fail(c, http.StatusBadRequest, "INVALID_ORDER", 0, nil)
	}
	if verdict.field != "" {
		return s.failField(c, http.StatusBadRequest, "INVALID_ORDER", verdict.field)
	}
	// Row 3: session and PIN (staff need no PIN).
	if guest {
		if _, ok, err := s.sessionGate(c, s.orderSession); !ok {
			return err
		}
	} else if !validSessionID(sessionID) {
		return s.fail(c, http.StatusNotFound, "SESSION_NOT_FOUND", 0, nil)
	}
	// Row 4: a node still loading its replica has no catalog.
	if verdict.empty {
		return s.fail(c, http.StatusServiceUnavailable, "CATALOG_NOT_READY", 2*time.Second, nil)
	}
	cmd := placeOrderCmd{
		SessionID: sessionID, RequestID: key, ClientID: clientID, Source: source, Node: s.cfg.NodeID,
		Items: lines, Fingerprint: admission.Fingerprint(sessionID, lines), ExpectedTotal: req.ExpectedTotal,
		AllowRepeat: req.AllowRepeat, CandidateID: s.orderCandidate(), Windows: s.windows(), Attempt: newRequestID(),
	}
	// Certain rejections and committed replays are answered from the local
	// replica, so a guest cannot write to the log faster than the
	// admission windows allow (preadmit.go).
	refund := func() {}
	if guest {
		r, answered, rf := s.preAdmit(c.Request().Context(), cmd, remoteHost(c))
		if answered {
			return s.respond(c, r)
		}
		refund = rf
	}
	// A keyed order is idempotent: after a leader change the same command
	// is proposed again and answers as the first time (same attempt),
	// never a second order. A staff order's answer is the order object,
	// from the command itself: a committed order never answers an error.
	r, err := s.propose(c.Request().Context(), CmdPlaceOrder, cmd, key != "")
	if err == nil && r.Status == http.StatusOK && !r.Replay {
		refund() // admitted orders are bounded by the burst window already
	}
	if err != nil {
		return s.failErr(c, err)
	}
	r.Field = guestLineField(r.Field, lines, req.Items)
	return s.respond(c, r)
}

// cartVerdict is the local catalog's view of a cart before proposing:
// empty a replica with no menu at all, known every item and topping found,
// field the first bad option choice (by the guest's line numbers).
type cartVerdict struct {
	empty, known bool
	field        string
}

// catalogKnows judges the cart (normalized, and as sent for the option
// fields) against the local catalog in one read (none when the admission
// state knows the catalog version and the cache holds it: orderMenu,
// admitsession.go). A replica that may lag a menu write made through
// another box catches up once before it calls an item unknown or a
// choice wrong.
func (s *Service) catalogKnows(ctx context.Context, lines, asSent []admission.Line) (cartVerdict, error) {
	judge := func() (v cartVerdict, err error) {
		menu, err := s.orderMenu()
		if err != nil {
			return v, err
		}
		if len(menu) == 0 {
			return cartVerdict{empty: true}, nil
		}
		for _, l := range lines {
			if _, _, found := resolveLine(menu, l); !found {
				return v, nil
			}
		}
		return cartVerdict{known: true, field: cartOptionsField(menu, asSent)}, nil
	}
	v, err := judge()
	if err != nil || (v.known && v.field == "") {
		return v, err
	}
	if err := s.consistent(ctx); err != nil {
		return v, err
	}
	return judge()
}
