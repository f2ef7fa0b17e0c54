package setup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"masterorder/httpapi"
	"masterorder/setup/cluster"
	"masterorder/ui"
)

// StartFunc turns this process into a member: it opens the store from
// the config file setup just wrote (cli/member.go's startMember), mounting
// routes on the member's HTTP server before it starts serving, and
// returns the function that stops it.
type StartFunc func(ctx context.Context, configPath string, routes func(*echo.Echo)) (stop func(), err error)

// Options configure a box in setup mode.
type Options struct {
	Layout Layout
	// Listen is the setup page and claim channel (one port: TLS is told
	// apart by its first byte); its port becomes the member's HTTP port.
	Listen string
	// HTTPSPort and RaftPort are the ports the box will serve as a member.
	HTTPSPort, RaftPort int
	// Window is the claim window's length (0: DefaultWindow), opened at
	// boot, or at process start with WindowFromStart (demo, tests, a
	// machine that is not a box).
	Window          time.Duration
	WindowFromStart bool
	Version         string
	// Probe lists setup addresses (host:port) to ask directly, besides
	// mDNS: where multicast does not reach (loopback, tests).
	Probe []string
	// MDNS announces the box and browses for others by mDNS / DNS-SD.
	MDNS   bool
	Logger *slog.Logger
	Start  StartFunc
	// MemberTXT is what the box adds to its announcement once it is a
	// member of the config at path (cli: node/peerfind's node id, cluster
	// and ports, by which the other members find it at a new address).
	MemberTXT func(path string) []string
	// Now is the clock for the claim window (tests); nil: time.Now.
	Now func() time.Time
}

// ErrMember: the box has a config; it runs as a member, not in setup.
var ErrMember = errors.New("setup: this box is already configured (a member); a factory reset returns it to setup mode")

// Box is one box in setup mode.
type Box struct {
	opts   Options
	log    *slog.Logger
	id     Identity
	window Window
	code   string
	dev    Device
	ports  Ports
	wizard *Wizard

	mu         sync.Mutex
	wrongCodes int
	configured bool
	cfgPath    string
	becameCh   chan struct{}

	ln  *sniffListener
	srv *http.Server
}

// maxWrongCodes locks the claim until the next power-on: a stranger on
// the Wi-Fi cannot try codes for the whole window.
const maxWrongCodes = 10

// New prepares a box in setup mode (its identity is made on the first
// start). It refuses a configured box and one that was claimed but not
// configured (ModeClaimed stays claimed until a factory reset).
func New(opts Options) (*Box, error) {
	if opts.Layout.ModeOf() == ModeMember {
		return nil, ErrMember
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Start == nil {
		return nil, errors.New("setup: no StartFunc")
	}
	id, err := LoadIdentity(opts.Layout.SetupDir())
	if err != nil {
		return nil, err
	}
	code, err := ReadSetupCode(opts.Layout.BootDir, opts.Layout.EtcDir)
	if err != nil {
		return nil, fmt.Errorf("setup code: %w", err)
	}
	b := &Box{opts: opts, log: opts.Logger, id: id, code: code, dev: ReadDevice(opts.Layout.SysRoot), becameCh: make(chan struct{})}
	if opts.WindowFromStart {
		b.window = Window{Opened: opts.Now(), Length: opts.Window}
	} else {
		b.window = BootWindow(joinRoot(opts.Layout.SysRoot, "proc/uptime"), opts.Window, opts.Now())
	}
	b.wizard = newWizard(b)
	return b, nil
}

func joinRoot(root, p string) string {
	if root == "" {
		root = "/"
	}
	return root + "/" + p
}

// Identity is the box's setup identity.
func (b *Box) Identity() Identity { return b.id }

// Wizard is the box's wizard (it outlives setup mode: a member keeps
// reporting the progress of the setup it ran).
func (b *Box) Wizard() *Wizard { return b.wizard }

// Listen binds the setup port (Run calls it if the caller did not, e.g.
// to learn a port picked by the system).
func (b *Box) Listen() error {
	if b.ln != nil {
		return nil
	}
	l, err := net.Listen("tcp", b.opts.Listen)
	if err != nil {
		return fmt.Errorf("setup: listen %s: %w", b.opts.Listen, err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	b.ports = Ports{HTTP: p, HTTPS: b.opts.HTTPSPort, Raft: b.opts.RaftPort}
	if b.ports.HTTPS == 0 {
		b.ports.HTTPS = 443
	}
	if b.ports.Raft == 0 {
		b.ports.Raft = 7000
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{b.id.Cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	b.ln = newSniffListener(l, tlsCfg)
	return nil
}

// Addr is the bound setup address.
func (b *Box) Addr() string {
	if b.ln == nil {
		return b.opts.Listen
	}
	return b.ln.Addr().String()
}

// Info is what the box says about itself now.
func (b *Box) Info() Info {
	b.mu.Lock()
	configured := b.configured
	b.mu.Unlock()
	state := b.opts.Layout.ModeOf()
	if configured {
		state = ModeMember
	}
	now := b.opts.Now()
	return Info{ID: b.id.ID, ShortCode: b.id.ShortCode(), State: state, Version: b.opts.Version, Fingerprint: b.id.Fingerprint,
		Device: b.dev, Ports: b.ports, WindowOpen: b.window.OpenAt(now), WindowCloses: b.window.Closes(), CodeRequired: b.code != ""}
}

// Run serves setup mode until the box is configured, then runs it as a
// member (opts.Start) until ctx ends.
func (b *Box) Run(ctx context.Context) error {
	if err := b.Listen(); err != nil {
		return err
	}
	b.srv = &http.Server{Handler: b.Routes(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 60 * time.Second}
	served := make(chan error, 1)
	go func() { served <- b.srv.Serve(b.ln) }()
	var ann *Announcer
	if b.opts.MDNS {
		var err error
		ann, err = Announce(b.announcement(b.Info().State))
		if err != nil {
			b.log.Warn("setup: not announced by mDNS (the wizard still finds boxes given by address)", "error", err)
		}
	}
	defer ann.Close()
	b.log.Info("setup mode", "addr", b.Addr(), "box", b.id.ShortCode(), "fingerprint", b.id.Fingerprint,
		"claim_window_closes", b.window.Closes().Format(time.RFC3339), "setup_code", b.code != "")
	select {
	case <-ctx.Done():
		b.shutdown()
		return nil
	case err := <-served:
		return fmt.Errorf("setup server: %w", err)
	case <-b.becameCh:
	}
	b.shutdown()
	b.mu.Lock()
	path := b.cfgPath
	b.mu.Unlock()
	b.log.Info("setup: configured; starting as a member", "config", path)
	stop, err := b.opts.Start(ctx, path, func(e *echo.Echo) { MemberRoutes(e, b.opts.Layout.TLSDir(), b.wizard) })
	if err != nil {
		return fmt.Errorf("setup: start as a member: %w", err)
	}
	if ann != nil {
		a := b.announcement(ModeMember)
		if b.opts.MemberTXT != nil {
			a.Member = b.opts.MemberTXT(path)
		}
		if err := ann.Update(a); err != nil {
			b.log.Warn("setup: mDNS announce as member", "error", err)
		}
	}
	<-ctx.Done()
	stop()
	return nil
}

func (b *Box) announcement(state Mode) Announcement {
	return Announcement{ID: b.id.ID, State: state, Version: b.opts.Version, Fingerprint: b.id.Fingerprint, Port: b.ports.HTTP}
}

func (b *Box) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.srv.Shutdown(ctx)
	b.ln.Close()
}

// Routes is setup mode's HTTP surface (Run serves it; api/api_test.go
// holds it to the contract).
func (b *Box) Routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = httpapi.ErrorHandler(b.log, nil)
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: "2M", Skipper: skipsBodyLimit}))
	ui.RegisterSetup(e)
	v1 := e.Group(claimPrefix, tlsOnly)
	v1.GET("/info", func(c echo.Context) error { return c.JSON(http.StatusOK, b.Info()) })
	v1.POST("/identify", b.handleIdentify)
	v1.POST("/claim", b.handleClaim)
	v1.POST("/configure", b.handleConfigure)
	v1.POST("/release", b.handleRelease)
	b.wizard.routes(e)
	caRoutes(e, "")
	return e
}

// tlsOnly refuses the claim channel over plain HTTP: configuration and
// secrets never travel in clear.
func tlsOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().TLS == nil {
			return httpapi.Fail(c, http.StatusForbidden, "TLS_REQUIRED")
		}
		return next(c)
	}
}

func (b *Box) handleIdentify(c echo.Context) error {
	ok := Identify(context.Background(), b.opts.Layout.SysRoot, 15*time.Second)
	return c.JSON(http.StatusOK, map[string]bool{"blinking": ok})
}

func (b *Box) handleClaim(c echo.Context) error {
	var req ClaimRequest
	if err := httpapi.DecodeBody(c, &req); err != nil || req.Claimer == "" || len(req.Claimer) > 64 {
		return httpapi.Fail(c, http.StatusBadRequest, "INVALID_SETUP")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.configured {
		return httpapi.Fail(c, http.StatusConflict, "NOT_IN_SETUP")
	}
	if cl, ok := b.opts.Layout.readClaim(); ok {
		if cl.Claimer == req.Claimer && b.codeOK(req.Code) {
			return c.JSON(http.StatusOK, ClaimResponse{Token: cl.Token}) // the same setup retrying
		}
		return httpapi.Fail(c, http.StatusConflict, "ALREADY_CLAIMED")
	}
	if !b.window.OpenAt(b.opts.Now()) {
		return httpapi.Fail(c, http.StatusForbidden, "CLAIM_WINDOW_CLOSED")
	}
	if b.code != "" {
		switch {
		case b.wrongCodes >= maxWrongCodes:
			return httpapi.Fail(c, http.StatusForbidden, "SETUP_LOCKED")
		case req.Code == "":
			return httpapi.Fail(c, http.StatusForbidden, "SETUP_CODE_REQUIRED")
		case !b.codeOK(req.Code):
			b.wrongCodes++
			b.log.Warn("setup: wrong setup code", "from", c.RealIP(), "tries", b.wrongCodes)
			return httpapi.Fail(c, http.StatusForbidden, "SETUP_CODE_WRONG")
		}
	}
	token, err := randomToken()
	if err != nil {
		return err
	}
	if err := b.opts.Layout.writeClaim(claim{Claimer: req.Claimer, Token: token, At: time.Now().UTC()}); err != nil {
		b.log.Error("setup: write claim", "error", err)
		return httpapi.Fail(c, http.StatusInternalServerError, "INTERNAL")
	}
	b.log.Info("setup: claimed", "by", req.Claimer, "from", c.RealIP())
	return c.JSON(http.StatusOK, ClaimResponse{Token: token})
}

func (b *Box) codeOK(code string) bool {
	return b.code == "" || subtle.ConstantTimeCompare([]byte(code), []byte(b.code)) == 1
}

// claimRefusal is why a call that needs the claim's token is refused:
// 409 NOT_IN_SETUP once configured, 403 CLAIM_TOKEN_WRONG for another
// token; code "" lets it go on (callers hold b.mu).
func (b *Box) claimRefusal(token string) (status int, code string) {
	switch {
	case b.configured:
		return http.StatusConflict, "NOT_IN_SETUP"
	case !b.claimedBy(token):
		return http.StatusForbidden, "CLAIM_TOKEN_WRONG"
	}
	return 0, ""
}

// claimedBy checks the claim token (callers hold b.mu).
func (b *Box) claimedBy(token string) bool {
	cl, ok := b.opts.Layout.readClaim()
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(cl.Token)) == 1
}

func (b *Box) handleConfigure(c echo.Context) error {
	var req ConfigureRequest
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.BadBody(c, err, "INVALID_SETUP")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if status, code := b.claimRefusal(req.Token); code != "" {
		return httpapi.Fail(c, status, code)
	}
	if _, port, err := net.SplitHostPort(req.Config.HTTPAddr); err != nil || port != strconv.Itoa(b.ports.HTTP) {
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "INVALID_SETUP", Detail: "http_addr must use this box's port " + strconv.Itoa(b.ports.HTTP)})
	}
	path, err := b.opts.Layout.writeConfigured(cluster.Bundle{Config: req.Config, Files: req.Files})
	if err != nil {
		// A file the card would not take (full, read-only, failing) is
		// the box's trouble, not the setup's.
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			b.log.Error("setup: the pushed config could not be written", "error", err)
			return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "CARD_WRITE_FAILED", Detail: err.Error()})
		}
		b.log.Warn("setup: pushed config refused", "error", err)
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "INVALID_SETUP", Detail: err.Error()})
	}
	b.configured, b.cfgPath = true, path
	close(b.becameCh)
	return c.JSON(http.StatusAccepted, map[string]string{"state": string(ModeMember), "nodeId": req.Config.NodeID})
}

// takenByAnother reports whether another box's wizard claimed this box
// (the claimed marker stays once it configured it too).
func (b *Box) takenByAnother() bool {
	cl, ok := b.opts.Layout.readClaim()
	return ok && cl.Claimer != b.id.ID
}

func (b *Box) handleRelease(c echo.Context) error {
	var req ReleaseRequest
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.Fail(c, http.StatusBadRequest, "INVALID_SETUP")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if status, code := b.claimRefusal(req.Token); code != "" {
		return httpapi.Fail(c, status, code)
	}
	if err := b.opts.Layout.dropClaim(); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"state": string(ModeSetup)})
}

func randomToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw[:]), nil
}
