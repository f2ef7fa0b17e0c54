package node

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"masterorder/api"
	"masterorder/httpapi"
	"masterorder/node/certrenew"
	"masterorder/node/restart"
	"masterorder/node/wallclock"
	"masterorder/raftfsm"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 64 << 10

// largeBodies are the routes whose handler bounds its own body instead
// (a menu picture is up to 256 KiB).
var largeBodies sync.Map

// AllowLargeBody exempts one method of a route (its echo path) from
// MaxBodyBytes; its handler must read a bounded amount itself.
func AllowLargeBody(method, route string) { largeBodies.Store(method+" "+route, true) }

func boundsOwnBody(c echo.Context) bool {
	_, ok := largeBodies.Load(c.Request().Method + " " + c.Path())
	return ok
}

// FailErr maps cluster errors (no quorum, halted) to their answers; other
// errors become 500 INTERNAL without details (they are logged).
func (n *Node) FailErr(c echo.Context, err error) error {
	switch {
	case errors.Is(err, ErrNoQuorum), errors.Is(err, ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "NO_QUORUM", RetryAfter: 2 * time.Second})
	case errors.Is(err, ErrDiskFull):
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "DISK_FULL", RetryAfter: 2 * time.Second})
	case errors.Is(err, ErrDiskLow):
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "DISK_LOW", RetryAfter: time.Minute})
	case errors.Is(err, raftfsm.ErrPaused):
		code := "DISK_READONLY"
		var pe *raftfsm.PausedError
		if errors.As(err, &pe) && pe.Class == raftfsm.ClassFull {
			code = "DISK_FULL"
		}
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: code, RetryAfter: 2 * time.Second})
	case errors.Is(err, ErrNotSwitchedOn):
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "FEATURE_NOT_READY", RetryAfter: 5 * time.Second})
	case errors.Is(err, ErrHalted):
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "NODE_HALTED", RetryAfter: 5 * time.Second})
	default:
		n.log.Error("request failed", "path", c.Path(), "error", err)
		return httpapi.Fail(c, http.StatusInternalServerError, "INTERNAL")
	}
}

func newEcho(n *Node) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = httpapi.ErrorHandler(n.log, n.FailErr)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		n.log.Error("panic in handler", "path", c.Path(), "error", err, "stack", string(stack))
		return err
	}}))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: fmt.Sprint(MaxBodyBytes/1024) + "K", Skipper: boundsOwnBody}))
	e.Use(bodyDeadline)
	e.Use(n.writeDeadline)
	e.Use(n.securityHeaders)
	e.Use(n.plainHTTPGuard)
	e.Use(n.cors())
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/readyz", n.handleReady)
	e.GET("/api/cluster/status", n.handleStatus)
	// The contract itself, public like the guest app it describes: an
	// integrator reads it from any box, and it holds no secret.
	e.GET(api.Path, func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.Blob(http.StatusOK, api.ContentType, api.Document)
	})
	return e
}

// BodyReadTimeout bounds reading a request body. The server has no
// overall read timeout (the kitchen stream lives for hours), so without
// this a client that trickles its body, or announces a chunk it never
// sends, holds a handler and a connection for ever; a phone could pile
// them up until the box runs out of file descriptors.
const BodyReadTimeout = 10 * time.Second

// bodyDeadline sets a read deadline on the connection while a request
// body is read, and lifts it once the body is read (so a handler that
// then waits on Raft is not cut off).
func bodyDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(c.Response())
			if rc.SetReadDeadline(time.Now().Add(BodyReadTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		return next(c)
	}
}

// DefaultWriteTimeout bounds writing one ordinary API response: a client
// that never reads would otherwise hold a goroutine and its buffers for
// good. Streams extend it per write instead (ExtendWriteDeadline).
const DefaultWriteTimeout = 30 * time.Second

func (n *Node) writeTimeout() time.Duration {
	if d := n.opts.WriteTimeout; d > 0 {
		return d
	}
	return DefaultWriteTimeout
}

// writeDeadline gives every response writeTimeout from the start of the
// request (the HTTP servers set no WriteTimeout, which streams could not
// outlive).
func (n *Node) writeDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		n.ExtendWriteDeadline(c.Response())
		return next(c)
	}
}

// ExtendWriteDeadline gives a stream (the kitchen's SSE) writeTimeout for
// its next writes; it calls it before each write, so a live stream
// outlasts the bound and a reader that stopped reading is cut off.
func (n *Node) ExtendWriteDeadline(w http.ResponseWriter) {
	// Not every ResponseWriter supports deadlines (tests' recorders).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(n.writeTimeout()))
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() { b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// securityHeaders: the web apps load nothing from elsewhere and run no
// inline script, so a guest on the same Wi-Fi cannot inject or frame them;
// they may call only this box and the other members (failover), not any
// origin an injected script would like to send data to.
func (n *Node) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", n.contentSecurityPolicy())
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// cspLifetime is how long a built Content-Security-Policy is reused.
// Building it asks Raft for the membership and the KV for members'
// addresses, a few µs of every guest order; a box that joined or moved
// is in the policy a second later.
const cspLifetime = time.Second

type builtCSP struct {
	value string
	at    time.Time
}

// contentSecurityPolicy is the policy every answer carries, rebuilt at
// most once per cspLifetime.
func (n *Node) contentSecurityPolicy() string {
	if b := n.csp.Load(); b != nil && time.Since(b.at) < cspLifetime {
		return b.value
	}
	v := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' " +
		strings.Join(n.peerOrigins(), " ") + "; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
	n.csp.Store(&builtCSP{value: v, at: time.Now()})
	return v
}

// peerOrigins are the members' web origins (HTTP and HTTPS), for CSP.
func (n *Node) peerOrigins() []string {
	var out []string
	add := func(scheme, addr string) {
		if addr == "" {
			return
		}
		addrs := []string{addr}
		if host, port, ok := strings.Cut(addr, ":"); ok && (host == "127.0.0.1" || host == "localhost") {
			addrs = []string{"localhost:" + port, "127.0.0.1:" + port} // as cors()
		}
		for _, a := range addrs {
			if !slices.Contains(out, scheme+a) {
				out = append(out, scheme+a)
			}
		}
	}
	for _, p := range n.cfg.Peers {
		add("http://", p.HTTPAddr)
		add("https://", p.HTTPSAddr)
	}
	if r := n.raftRef.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, srv := range f.Configuration().Servers {
				add("http://", n.MemberHTTP(string(srv.ID)))
			}
		}
	}
	return out
}

// AllowOrigin lets pages loaded from origin (scheme://host[:port]) call
// this box: the domain adds the store's one public address, through which
// pages are loaded and which then call the boxes directly on failover.
func (n *Node) AllowOrigin(origin string) {
	n.extrasMu.Lock()
	defer n.extrasMu.Unlock()
	n.origins = append(n.origins, strings.TrimSuffix(origin, "/"))
}

func (n *Node) allowedOrigin(origin string) bool {
	n.extrasMu.Lock()
	defer n.extrasMu.Unlock()
	return slices.Contains(n.origins, origin)
}

// cors lets the web apps served by one box call the others (order-sdk.js
// retries on another node; the kitchen screen fails over).
func (n *Node) cors() echo.MiddlewareFunc {
	var origins []string
	for _, p := range n.cfg.Peers {
		origins = append(origins, "http://"+p.HTTPAddr)
		if p.HTTPSAddr != "" {
			origins = append(origins, "https://"+p.HTTPSAddr)
		}
		if host, port, ok := strings.Cut(p.HTTPAddr, ":"); ok && (host == "127.0.0.1" || host == "localhost") {
			origins = append(origins, "http://localhost:"+port, "http://127.0.0.1:"+port)
		}
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		// Configured peers, and members added later (membership.go).
		AllowOriginFunc: func(origin string) (bool, error) {
			return slices.Contains(origins, origin) || n.memberOrigin(origin) || n.allowedOrigin(origin) || n.movedMemberOrigin(origin), nil
		},
		AllowMethods:  []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowHeaders:  []string{"Authorization", "Content-Type", "Idempotency-Key", "X-MasterOrder-Client-Id", "X-Session-PIN", "X-Session-Credential", "X-CSRF-Token", "Last-Event-ID", "Accept-Language"},
		ExposeHeaders: []string{"Retry-After", "X-Session-Credential", "X-MasterOrder-Idempotent-Replay", "Idempotent-Replayed", StaleHeader},
		MaxAge:        600,
	})
}

// StaleHeader marks an answer read from this box's replica without a
// quorum: it holds every order this box has applied, maybe not the newest.
const StaleHeader = "X-MasterOrder-Stale"

// ReadReplica is the read barrier of every read endpoint: read-your-writes
// while the cluster answers (StaleHeader "false"), the replica as it is
// without a quorum (StaleHeader "true"). It reports whether the answer is
// stale; an error (a halted node, a caller gone) is for FailErr.
func (n *Node) ReadReplica(c echo.Context) (stale bool, err error) {
	stale, err = n.ReadLocal(c.Request().Context())
	if err != nil {
		return false, err
	}
	c.Response().Header().Set(StaleHeader, strconv.FormatBool(stale))
	return stale, nil
}

// Ready reports whether this node knows a leader it heard from recently and
// has applied what it knows to be committed.
func (n *Node) Ready() bool {
	if n.raft == nil || n.fsm.Halted() != nil || n.voteRefusal() != nil {
		// Halted, paused, or its Raft log takes no writes (disk.go).
		return false
	}
	switch n.raft.State() {
	case raft.Leader:
		if !n.ready.Load() {
			return false
		}
		// A leader that lost its quorum steps down after the lease; until
		// then it must not call itself ready.
		if err := n.verifyLeader(n.cfg.Raft.ElectionTimeout.Duration); err != nil {
			return false
		}
	case raft.Follower:
		if _, id := n.raft.LeaderWithID(); id == "" {
			return false
		}
		if time.Since(n.raft.LastContact()) > n.cfg.Raft.ElectionTimeout.Duration {
			return false
		}
	default:
		return false
	}
	return n.fsm.Handled() >= n.raft.CommitIndex()
}

func (n *Node) handleReady(c echo.Context) error {
	if n.Ready() {
		return c.String(http.StatusOK, "ready")
	}
	return c.String(http.StatusServiceUnavailable, "not ready")
}

// LeaderInfo names the leader in the status.
type LeaderInfo struct {
	ID       string `json:"id"`
	HTTPAddr string `json:"httpAddr"`
}

// MemberStatus is one member in the status.
type MemberStatus struct {
	ID        string `json:"id"`
	RaftAddr  string `json:"raftAddr"`
	HTTPAddr  string `json:"httpAddr"`
	HTTPSAddr string `json:"httpsAddr,omitempty"`
	Suffrage  string `json:"suffrage"`
	Reachable bool   `json:"reachable"`
	// DownSince is when this box last heard from that one (RFC 3339, its
	// own wall clock), present while it cannot reach it: the owner's
	// "box c has not answered since 10:42".
	DownSince string `json:"downSince,omitempty"`
	// Disk is the member's card as it last reported it (absent: never).
	Disk *DiskStatus `json:"disk,omitempty"`
	// LastRestart is why the member last started, as it last reported it
	// (absent: never, or its first start).
	LastRestart *restart.Record `json:"lastRestart,omitempty"`
	// Certificates is the member's certificates as it last reported them
	// (absent: never, or a box without HTTPS): when they lapse, whether
	// the box can renew its HTTPS certificate, the console's warning.
	Certificates *certrenew.Status `json:"certificates,omitempty"`
	// Build is the newest feature level the member's build knows and
	// whether it is in an update's trial boot, as it last reported them
	// (absent: never, or a build from before the feature level).
	Build *BuildReport `json:"build,omitempty"`
	// Clock is the member's clock as it last reported it (absent: never).
	Clock *wallclock.State `json:"clock,omitempty"`
}

// Status is GET /api/cluster/status.
type Status struct {
	NodeID       string         `json:"nodeId"`
	State        string         `json:"state"`
	Leader       *LeaderInfo    `json:"leader"`
	Term         uint64         `json:"term"`
	CommitIndex  uint64         `json:"commitIndex"`
	AppliedIndex uint64         `json:"appliedIndex"`
	Nodes        []MemberStatus `json:"nodes"`
	FSMTime      int64          `json:"fsmTime"`
	// ClockSuspect: this box's clock is not known to show the real time
	// (Clock.Trusted is false).
	ClockSuspect bool `json:"clockSuspect"`
	// Clock is this box's clock: where its time came from (clock.go).
	Clock *ClockStatus `json:"clock,omitempty"`
	// Stale: this node cannot reach a quorum and serves its replica as is.
	Stale bool `json:"stale"`
	// Disk is this box's card (disk.go).
	Disk *DiskStatus `json:"disk,omitempty"`
	// CloudSync is the domain's cloud sync status (AddStatus).
	CloudSync any `json:"cloudSync,omitempty"`
	// ShopName is the shop's name, for the staff screen's header (AddStatus).
	ShopName string `json:"shopName,omitempty"`
	// TimeZone is the store's time zone, the screens' times' (AddStatus).
	TimeZone string `json:"timeZone,omitempty"`
	// FeatureLevel is the cluster's feature level as this box applied it
	// (0: none yet); BuildLevel the newest one this box's build knows. A
	// BuildLevel below FeatureLevel is a box rolled back or joined with an
	// older build: it halts at the first entry it cannot apply.
	FeatureLevel uint32 `json:"featureLevel"`
	BuildLevel   uint32 `json:"buildLevel"`
	// StaffURL and KitchenURL are the staff and kitchen screens by the
	// store's name (mdns_name): the addresses tablets keep, which survive
	// a new router and a dead box (absent without mdns_name or HTTPS).
	StaffURL   string `json:"staffUrl,omitempty"`
	KitchenURL string `json:"kitchenUrl,omitempty"`
}

// AddStatus installs fn to fill the domain's part of the status.
func (n *Node) AddStatus(fn func(*Status)) {
	n.extrasMu.Lock()
	n.statusFns = append(n.statusFns, fn)
	n.extrasMu.Unlock()
}

// Status reports the node's view of the cluster.
func (n *Node) Status() Status {
	s := Status{
		NodeID:      n.cfg.NodeID,
		State:       strings.ToLower(n.raft.State().String()),
		Term:        n.raft.CurrentTerm(),
		CommitIndex: n.raft.CommitIndex(),
		// What the state machine has applied, as readiness counts it; its
		// files may commit up to one group later (raftfsm/group.go).
		AppliedIndex: n.fsm.Handled(),
		FSMTime:      n.FSMNow(),
		FeatureLevel: n.fsm.FeatureLevel(),
		BuildLevel:   n.fsm.BuildLevel(),
	}
	if base := n.StaffNameBase(); base != "" {
		s.StaffURL, s.KitchenURL = base+"/staff/", base+"/kitchen/"
	}
	clk := n.ClockStatus()
	s.Clock, s.ClockSuspect = &clk, !clk.Trusted
	if d := n.Disk(); d.State != "" {
		s.Disk = &d
	}
	if id, _ := n.LeaderID(); id != "" {
		s.Leader = &LeaderInfo{ID: id, HTTPAddr: n.MemberHTTP(id)}
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			id := string(srv.ID)
			suffrage := "voter"
			if srv.Suffrage != raft.Voter {
				suffrage = "nonvoter"
			}
			m := MemberStatus{ID: id, RaftAddr: string(srv.Address), HTTPAddr: n.MemberHTTP(id), HTTPSAddr: n.memberHTTPS(id),
				Suffrage: suffrage, Reachable: id == n.cfg.NodeID}
			if !m.Reachable {
				var since time.Time
				m.Reachable, since = n.probe.state(id)
				if !since.IsZero() {
					m.DownSince = since.UTC().Format(time.RFC3339)
				}
			}
			if d, ok := n.PeerDisk(id); ok && d.State != "" {
				m.Disk = &d
			}
			m.LastRestart = n.PeerRestart(id)
			m.Certificates = n.PeerCerts(id)
			if b, _, ok := n.PeerBuild(id); ok {
				m.Build = &b
			}
			m.Clock = n.PeerClock(id)
			s.Nodes = append(s.Nodes, m)
		}
	}
	n.extrasMu.Lock()
	fns := n.statusFns
	n.extrasMu.Unlock()
	for _, fn := range fns {
		fn(&s)
	}
	return s
}

func (n *Node) handleStatus(c echo.Context) error {
	stale, err := n.ReadReplica(c)
	if err != nil && !errors.Is(err, ErrHalted) {
		return n.FailErr(c, err)
	}
	if !n.privileged(c.Request()) {
		return c.JSON(http.StatusOK, n.guestStatus())
	}
	s := n.Status()
	// A halted node still tells what it knows: that is what status is for.
	s.Stale = stale || err != nil
	return c.JSON(http.StatusOK, s)
}

// MemberHTTP returns a member's HTTP address now: where the peer book
// found it (peeraddr.go), on the port of its configured address
// (configured peers, then members added later, recorded in the KV by the
// membership call).
func (n *Node) MemberHTTP(id string) string {
	return n.book.current(id, n.configuredHTTP(id))
}

// configuredHTTP is a member's HTTP address as configured.
func (n *Node) configuredHTTP(id string) string {
	if a := n.cfg.PeerHTTP(id); a != "" {
		return a
	}
	if e, ok, _ := n.kv.Get("member:" + id); ok {
		return string(e.Value)
	}
	return ""
}

// memberHTTPS is a member's HTTPS address now when the config knows it.
func (n *Node) memberHTTPS(id string) string {
	if id == n.cfg.NodeID {
		return n.book.current(id, n.cfg.HTTPSAddr)
	}
	for _, p := range n.cfg.Peers {
		if p.ID == id && p.HTTPSAddr != "" {
			return n.book.current(id, p.HTTPSAddr)
		}
	}
	return ""
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
