package orders

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/kv"
	"masterorder/node"
	"masterorder/orders/cloudsync"
	"masterorder/orders/staffauth"
	"masterorder/orders/store"
	"masterorder/orders/stream"
	"masterorder/raftfsm"
)

// The backup's headers, named where the CLI and the tests look for them.
const (
	BackupDigestTrailer = node.BackupDigestTrailer
	BackupErrorTrailer  = node.BackupErrorTrailer
	BackupIndexHeader   = node.BackupIndexHeader
)

// box is what the domain needs of its node while it serves, the seam
// between box and domain (*node.Node is one; wiring in Attach uses the
// rest of it).
type box interface {
	// Propose commits a command through Raft and returns its result.
	Propose(ctx context.Context, p node.Proposal) ([]byte, error)
	// ConsistentRead waits until this node applied everything committed.
	ConsistentRead(ctx context.Context) error
	// ReadReplica is ConsistentRead, or the replica flagged stale without
	// a quorum.
	ReadReplica(c echo.Context) (stale bool, err error)
	// FSM is the local replica: reads, applied index, command versions.
	FSM() *raftfsm.FSM
	// FSMNow estimates the cluster's FSM time.
	FSMNow() int64
	// KV is the coordination KV.
	KV() kv.Client
	Logger() *slog.Logger
	// Done is closed when the node stops.
	Done() <-chan struct{}
	// FailErr answers a cluster error (no quorum, halted) or a 500.
	FailErr(c echo.Context, err error) error
	// ExtendWriteDeadline lets a long response (a stream) keep writing.
	ExtendWriteDeadline(w http.ResponseWriter)
	// ClusterRoutes registers membership and backups on the staff group.
	ClusterRoutes(staff *echo.Group)
	// ClusterWall is the time the boxes go by (node/clock.go): for
	// today's date and what the console asks a manager to confirm.
	ClusterWall() time.Time
	// ClockStatus is this box's clock; ClockFromManager moves it forward
	// to a manager's time once the command applied.
	ClockStatus() node.ClockStatus
	ClockFromManager(wall, stamp int64, index uint64)
	// ManagerClockIndex is the index of the last tap ClockFromManager took.
	ManagerClockIndex() uint64
}

var _ box = (*node.Node)(nil)

// Service serves the domain's HTTP API on one node.
type Service struct {
	node    box
	cfg     FileConfig // the node's settings and the domain's
	hub     *stream.Hub
	auth    *staffauth.Auth
	limiter *staffauth.LoginLimiter
	bcrypt  *staffauth.BcryptGate // bounds concurrent password checks
	// syncer is the syncer running on this box (the leader), nil when
	// none runs; fileSyncer is [firestore]'s when the file enables it.
	syncer     atomic.Pointer[cloudsync.Syncer]
	fileSyncer *cloudsync.Syncer
	cloudRuns  sync.WaitGroup // the cloud worker while it runs
	// cloudChanged wakes the cloud worker when the Cloud page's setting
	// changed; sealer seals and opens its key (cloud_setting.go).
	cloudChanged chan struct{}
	sealer       *cloudSealer
	catalog      catalog  // menu cache for validating carts
	pins         pinGuard // wrong PINs in flight on this node
	// admit is the FSM's admission state (admitstate.go), which the
	// replay check reads which order a key replays from (preadmit.go).
	admit *admitState
	// ids chooses each guest order's candidate id (orderids.go).
	ids orderIDs
	// proposals caps guest order proposals per session and per address;
	// rejections counts the orders answered before proposing (preadmit.go).
	proposals  windowLimiter
	rejections rejectionCounts
	// passwordHash is the manager password's bcrypt hash, kitchenHash the
	// kitchen password's ("" = no kitchen login).
	passwordHash string
	kitchenHash  string
	// guestKey signs session credentials (pinguard.go); credMACs are
	// HMACs keyed with it, reset before each use.
	guestKey []byte
	credMACs sync.Pool
	// cloudStatusFn stands in for the cloud sync status in tests.
	cloudStatusFn func() CloudSyncStatus
	pages         func(*echo.Echo, *echo.Group) // Options.Pages
}

// Options configure a Service.
type Options struct {
	// StaffPasswordHash overrides [staff] password_hash (demo mode).
	StaffPasswordHash string
	// Pages mounts the web apps beside the API: the apps on e, and what
	// of theirs sits behind staff auth in staff (ui.Routes). The caller
	// passes them in so that the domain does not depend on its pages;
	// Attach requires them.
	Pages func(e *echo.Echo, staff *echo.Group)
}

// New builds the service for n with the domain's settings cfg and hooks
// its event hub to the FSM.
func New(n *node.Node, dom Config, opts Options) (*Service, error) {
	if err := dom.Validate(); err != nil {
		return nil, err
	}
	cfg := FileConfig{n.Config(), dom}
	secret, err := staffauth.DecodeSecret(cfg.Staff.TokenSecret)
	if err != nil {
		return nil, &node.ConfigError{Setting: "staff.token_secret", Problem: err.Error()}
	}
	s := &Service{node: n, cfg: cfg, limiter: staffauth.NewLoginLimiter(), passwordHash: cfg.Staff.PasswordHash, kitchenHash: cfg.Staff.KitchenPasswordHash,
		proposals: windowLimiter{limit: proposalLimit, window: proposalWindow},
		// Two comparisons at once: the boxes have four small cores and the
		// order path needs them.
		bcrypt: staffauth.NewBcryptGate(2), guestKey: guestKey(secret), cloudChanged: make(chan struct{}, 1)}
	if s.sealer, err = newCloudSealer(secret, cfg.ShopID); err != nil {
		return nil, &node.ConfigError{Setting: "staff.token_secret", Problem: err.Error()}
	}
	if opts.StaffPasswordHash != "" {
		s.passwordHash = opts.StaffPasswordHash
	}
	s.pages = opts.Pages
	issuer := &staffauth.Issuer{Secret: secret, TTL: cfg.Staff.TokenTTL.Duration,
		// Expiry is judged on FSM time, which every node agrees on even
		// when their wall clocks do not.
		Now: func() time.Time { return time.UnixMilli(n.FSMNow()) },
		// ...and by the cluster's wall time too when it is plausible:
		// FSM time stands still while the store is powered off. Not this
		// box's own clock: a box that just booted at its image's date
		// would stamp a token every other box calls expired.
		Wall:        n.ClusterWall,
		WallTrusted: func() bool { return n.ClockStatus().ClusterTrusted }}
	s.auth, err = staffauth.NewAuth(issuer, s.revoked)
	if err != nil {
		return nil, &node.ConfigError{Setting: "staff.token_secret", Problem: err.Error()}
	}
	// nil when the node applies with another table (a test's old build):
	// the replay check then reads the files.
	s.admit, _ = n.FSM().Registry().Memory().(*admitState)
	s.ids.random = randomOrderID
	s.hub = stream.NewHub(10000, n.FSM().Applied())
	n.FSM().SetListener(s.publish)
	n.FSM().SetRestoreListener(s.hub.Reset)
	return s, nil
}

// guestKey derives the session-credential key from the token secret (so
// rotating secrets voids credentials too).
func guestKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("masterorder guest session credential v1"))
	return m.Sum(nil)
}

// Hub is the node's kitchen event hub.
func (s *Service) Hub() *stream.Hub { return s.hub }

func (s *Service) publish(events []raftfsm.Event) {
	out := make([]stream.Event, 0, len(events))
	for _, e := range events {
		switch e.Type {
		case "order.created", "order.updated", "session.closed", "call.created", "call.done":
			out = append(out, stream.Event{ID: e.Index, Type: e.Type, Data: e.Data})
		case eventClockSet:
			s.clockSet(e)
		case eventCloudSetting:
			select {
			case s.cloudChanged <- struct{}{}:
			default:
			}
		}
	}
	if len(out) > 0 {
		s.hub.Publish(out)
		if sy := s.syncer.Load(); sy != nil {
			sy.Notify() // every kitchen event left an outbox row
		}
	}
}

func (s *Service) revoked(id string) bool {
	_, live, err := s.node.KV().Get(keyRevoked(id))
	return err == nil && live
}

// Routes registers every domain endpoint and the web apps (Options.Pages).
func (s *Service) Routes(e *echo.Echo) {
	e.POST("/api/staff/login", s.login)
	staff := e.Group("/api/staff", s.auth.Middleware(), roleGuard)
	staff.POST("/logout", s.logout)
	staff.GET("/menu", s.listMenu)
	staff.PUT("/menu/:menuId", s.putMenu)
	staff.GET("/stock", s.listStock)
	staff.PUT("/stock/:sku", s.putStock)
	staff.GET("/sessions", s.listSessions)
	staff.POST("/sessions", s.openSession)
	staff.POST("/sessions/:id/checkout/begin", s.checkoutStep(CmdCheckoutBegin))
	staff.POST("/sessions/:id/checkout/cancel", s.checkoutStep(CmdCheckoutCancel))
	staff.POST("/sessions/:id/checkout", s.checkoutStep(CmdCheckout))
	staff.POST("/sessions/:id/pin", s.resetPIN)
	staff.POST("/orders", s.staffOrder)
	staff.PATCH("/orders/:orderId", s.patchOrder)
	staff.GET("/audit", s.listAudit)
	staff.GET("/locks", s.listLocks)
	staff.DELETE("/locks/:key", s.releaseLock)
	staff.POST("/clock", s.setClock)
	if s.pages != nil {
		s.pages(e, staff)
	}
	s.printerRoutes(staff)
	s.cloudRoutes(staff)
	s.timeZoneRoutes(staff)
	s.contentRoutes(e, staff)
	s.menuImportRoutes(staff)

	// Only the stream takes ?token= (an EventSource cannot send headers).
	e.GET("/api/kitchen/orders", s.kitchenOrders, s.auth.Middleware(), roleGuard)
	e.GET("/api/kitchen/stream", s.kitchenStream, s.auth.StreamMiddleware(), roleGuard)
	e.POST("/api/kitchen/stream-ticket", s.kitchenStreamTicket, s.auth.Middleware(), roleGuard)
	e.POST("/api/kitchen/orders/:orderId/bump", s.bump, s.auth.Middleware(), roleGuard)

	guest := e.Group("/api/guest/sessions/:id")
	guest.GET("", s.guestSession)
	guest.GET("/menu", s.guestMenu)
	guest.GET("/orders", s.guestOrders)
	guest.POST("/orders", s.guestOrder)
	s.callRoutes(staff, guest)

	// Membership and backups are the box's, behind staff auth.
	s.node.ClusterRoutes(staff)
}

// propose encodes cmd, commits it through Raft (node.Propose: on the
// leader, or forwarded to it) and decodes its Result. Idempotent commands
// are retried across a leader change even when the outcome is unknown.
func (s *Service) propose(ctx context.Context, t raftfsm.CommandType, cmd any, idempotent bool) (Result, error) {
	v, err := s.switchedOn(ctx, t)
	if err != nil {
		return Result{}, err
	}
	payload, err := encodeCommand(cmd, v)
	if err != nil {
		return Result{}, fmt.Errorf("encode command: %w", err)
	}
	// A placed order's answer is whole from Apply (staffBody too): the
	// leader need not commit its files before answering it.
	out, err := s.node.Propose(ctx, node.Proposal{Type: t, Version: v, Payload: payload, Idempotent: idempotent, AnswerOnly: t == CmdPlaceOrder})
	if err != nil {
		return Result{}, err
	}
	r, err := decodeResult(out)
	if err != nil {
		return Result{}, fmt.Errorf("decode command result: %w", err)
	}
	return r, nil
}

// refused turns a refusal into an error, for proposers outside an HTTP
// request (workers, seeding) to whom any answer but 200 is a failure.
func refused(r Result, err error) (Result, error) {
	if err == nil && r.Status != http.StatusOK {
		err = fmt.Errorf("refused: status %d %s", r.Status, r.Reason)
	}
	return r, err
}

// version is what this node proposes for t: this build's newest, but
// never newer than its own dispatch table applies (a node never proposes
// what it would halt on itself), nor than the cluster's feature level
// allows (every box applies it: raftfsm/level.go). 0: not switched on.
func (s *Service) version(t raftfsm.CommandType) uint8 {
	return min(versionOf(t), s.node.FSM().ProposableVersion(t))
}

// levelWait bounds how long a proposer waits for the cluster's feature
// level to allow a command type: a new store's leader raises it within
// seconds of its start (every member reports its build every 2 s); a
// store in the middle of an update keeps it until the last box commits.
const levelWait = 10 * time.Second

// switchedOn is the version of t to propose, waiting up to levelWait for
// a type the cluster's feature level does not allow yet.
func (s *Service) switchedOn(ctx context.Context, t raftfsm.CommandType) (uint8, error) {
	v := s.version(t)
	if v != 0 {
		return v, nil
	}
	wait := time.NewTimer(levelWait)
	defer wait.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for v == 0 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-wait.C:
			return 0, fmt.Errorf("command %d at feature level %d: %w", t, s.node.FSM().FeatureLevel(), node.ErrNotSwitchedOn)
		case <-tick.C:
		}
		v = s.version(t)
	}
	return v, nil
}

// respond writes a command's Result: the success body, or the reason code
// with a message in the caller's language.
func (s *Service) respond(c echo.Context, r Result) error {
	if r.Status == http.StatusOK {
		if r.Replay {
			h := c.Response().Header()
			h.Set("X-MasterOrder-Idempotent-Replay", "true")
			h.Set("Idempotent-Replayed", "true")
		}
		return c.JSONBlob(http.StatusOK, r.Body)
	}
	if r.Field != "" {
		return s.failField(c, r.Status, r.Reason, r.Field)
	}
	return s.fail(c, r.Status, r.Reason, time.Duration(r.RetryAfterMs)*time.Millisecond, r.SKUs)
}

// fail answers with a reason code (httpapi.Write).
func (s *Service) fail(c echo.Context, status int, code string, retryAfter time.Duration, skus []string) error {
	return httpapi.Write(c, httpapi.Refusal{Status: status, Code: code, RetryAfter: retryAfter, SKUs: skus})
}

// failErr maps cluster errors to 503 NO_QUORUM and the rest to 500.
func (s *Service) failErr(c echo.Context, err error) error { return s.node.FailErr(c, err) }

// query runs a local read against the replica (prepared statements cached).
func (s *Service) query(fn func(db store.DB) error) error {
	return s.node.FSM().Read(func(q raftfsm.Querier) error { return fn(q) })
}

// consistent waits until this node has applied everything committed so far
// (read-your-writes on any node).
func (s *Service) consistent(ctx context.Context) error { return s.node.ConsistentRead(ctx) }

// readReplica is the barrier of every read endpoint: read-your-writes with
// a quorum, this box's replica flagged stale without one (node.ReadReplica).
func (s *Service) readReplica(c echo.Context) error {
	_, err := s.node.ReadReplica(c)
	return err
}

// windows are the admission windows from [admission].
func (s *Service) windows() Windows {
	a := s.cfg.Admission
	return Windows{CooldownMs: a.Cooldown.Milliseconds(), BurstMs: a.SessionBurst.Milliseconds(),
		PayloadMs: a.PayloadWindow.Milliseconds(), IdempotencyMs: a.IdempotencyTTL.Milliseconds()}
}

// orderCandidate is the candidate id of a guest order this box proposes:
// the next after the newest order it applied (orderids.go).
func (s *Service) orderCandidate() int64 {
	var newest int64
	if s.admit != nil {
		newest = s.admit.newestID.Load()
	}
	return s.ids.candidate(newest)
}

// randomOrderID is a random 31-bit id, non-zero: where a box's run of
// candidate ids starts when it knows no order yet.
func randomOrderID() int64 {
	var b [4]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint32(b[:])&0x7fffffff)%(1<<31-1) + 1
}

// newRequestID names one HTTP request in the command it proposes (staff
// request ids, order attempts): 128 random bits, hex.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:]) // as fmt's %x writes it, without fmt
}

// newSessionID: 128 random bits, URL-safe.
func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func newPIN() string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%04d", binary.BigEndian.Uint32(b[:])%10000)
}

// parseLimit reads ?limit= (default 50, at most 200).
func parseLimit(c echo.Context) (int, bool) {
	raw := c.QueryParam("limit")
	if raw == "" {
		return 50, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, false
	}
	return min(n, 200), true
}

// loadSession reads a session from the local replica.
func (s *Service) loadSession(id string) (store.Session, bool, error) {
	var sess store.Session
	var found bool
	err := s.query(func(db store.DB) error {
		var err error
		sess, found, err = store.GetSession(db, id)
		return err
	})
	return sess, found, err
}

// guestURL is the table's address for its QR code: public_url when the
// store has one address for all boxes, else the box the staff talks to.
// guestFallbackURL is the guest page at this box's own address, printed
// under a table's QR code for a phone that cannot resolve the store's
// name (Android before 12, a guest network that drops multicast): "" when
// public_url is unset or already an address, or when http_addr names no
// one address.
func (s *Service) guestFallbackURL(sessionID string) string {
	u, err := url.Parse(s.cfg.PublicURL)
	if s.cfg.PublicURL == "" || err != nil || net.ParseIP(u.Hostname()) != nil {
		return ""
	}
	host, _, err := net.SplitHostPort(s.cfg.HTTPAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || ip.IsUnspecified() {
		return ""
	}
	return "http://" + s.cfg.HTTPAddr + "/guest/?s=" + sessionID
}

func (s *Service) guestURL(c echo.Context, sessionID string) string {
	if u := s.cfg.PublicURL; u != "" {
		return strings.TrimSuffix(u, "/") + "/guest/?s=" + sessionID
	}
	return "http://" + c.Request().Host + "/guest/?s=" + sessionID
}
