package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"masterorder/node"
	"masterorder/node/peerfind"
	"masterorder/node/wallclock"
	"masterorder/node/watchdog"
	"masterorder/orders"
	"masterorder/setup"
	"masterorder/setup/cluster"
	"masterorder/setup/join"
	"masterorder/ui"
	"masterorder/update"
)

// The one way a box becomes a member of its store: `run --config`, `run`
// on a configured box and a box the setup wizard has just configured
// (in the same process) all start it with startMember and run it with
// wait.

// member is a box of a store running in this process: its node, with
// the domain attached.
type member struct {
	node *node.Node
	log  *slog.Logger
}

// errStopped: the context ended while the member was starting (SIGTERM
// while it waited for a peer's snapshot), which is a clean stop.
var errStopped = errors.New("stopped before start completed")

// startMember starts the member of cfg, logging to log (made from cfg's
// [log] settings): the process's memory limit, the node with the domain
// and the console, and routes mounted before it serves.
//
// restart ends the member so that its process exits and starts again:
// the "slots" update installer's way into the new version (package
// update; the image's RAUC installer reboots instead).
func startMember(ctx context.Context, cfg orders.FileConfig, log *slog.Logger, version string, restart func(), routes func(*echo.Echo)) (*member, error) {
	memLimit := node.SetMemoryLimit()
	// A store made before staff screens went by the store's name: its
	// HTTPS certificate gets the name (with the CA key on the box).
	if did, err := cluster.EnsureHTTPSNames(cfg.NodeID, cfg.MDNSName, cfg.TLS); err != nil {
		log.Warn("could not add the store's name to the HTTPS certificate", "name", cfg.MDNSName, "error", err)
	} else if did {
		log.Info("HTTPS certificate issued again with the store's name", "name", cfg.MDNSName)
	}
	var box *update.Box
	// The feature level is not raised while this box may still fall back
	// to its old version (node/featurelevel.go).
	var trial atomic.Pointer[update.Box]
	inTrial := func() bool { b := trial.Load(); return b != nil && b.InTrial() }
	withUpdates := func(n *node.Node) (err error) {
		box, err = update.New(n, update.Options{Version: version, Restart: restart, Logger: log})
		trial.Store(box)
		return err
	}
	n, _, err := startStoreWith(ctx, cfg, log, orders.Options{}, inTrial, withUpdates, routes)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before start completed", "error", err)
			return nil, errStopped
		}
		return nil, err
	}
	log.Info("node started", "node", cfg.NodeID, "http", cfg.HTTPAddr, "raft", cfg.RaftAddr, "version", version, "memory_limit_mib", memLimit>>20)
	// A box just restarted into a new version commits it once healthy,
	// or goes back to the old one.
	go box.Run(ctx)
	return &member{node: n, log: log}, nil
}

// wait runs the member until ctx ends (nil) or the box cannot go on in
// place (its error: a card gone read-only for good, for which the
// command exits non-zero so that its unit, or a reboot, can act). The
// node is stopped either way.
func (m *member) wait(ctx context.Context) error {
	defer m.node.Stop()
	select {
	case <-ctx.Done():
		m.log.Info("shutting down")
		return nil
	case err := <-m.node.Fatal():
		m.log.Error("exiting: the box cannot go on in place", "error", err)
		return err
	}
}

// runMember runs the member of the config file at path until ctx ends.
// tlsDir ("" = the config's CA file's directory) is where /ca.crt is
// served from.
func runMember(ctx context.Context, path, tlsDir string, e env) error {
	cfg, err := orders.LoadConfig(path)
	if err != nil {
		return err
	}
	if tlsDir == "" && cfg.TLS.CAFile != "" {
		tlsDir = filepath.Dir(cfg.TLS.CAFile)
	}
	log := newLogger(cfg.Log, e.stdout)
	ctx, restart := context.WithCancel(ctx)
	defer restart()
	m, err := startMember(ctx, cfg, log, e.build.Version, restart, func(ec *echo.Echo) { setup.MemberRoutes(ec, tlsDir, nil) })
	if errors.Is(err, errStopped) {
		return nil
	}
	if err != nil {
		return err
	}
	// READY=1 to systemd, and its watchdog fed while /healthz answers.
	watchdog.Start(ctx, watchdog.HTTP(cfg.HTTPAddr, "/healthz"), log)
	return m.wait(ctx)
}

// setupMembers starts the members that boxes in setup mode become once
// configured (start is their setup.StartFunc). setup's Run, once its
// box is a member, only waits for its context: a member that cannot go
// on ends the context withSetupMembers made, with its error as the
// cause, and outcome returns that error to the command. The command
// defers stop.
type setupMembers struct {
	fail    context.CancelCauseFunc
	version string
	// log is a member's logger from its [log] settings.
	log func(node.LogConfig) *slog.Logger
	// started, if set, is told of each member once it serves (tests).
	started func(*member)
}

// withSetupMembers is ctx for setup.Box.Run, and the members it starts.
func withSetupMembers(ctx context.Context, e env) (context.Context, *setupMembers) {
	ctx, fail := context.WithCancelCause(ctx)
	return ctx, &setupMembers{fail: fail, version: e.build.Version,
		log: func(c node.LogConfig) *slog.Logger { return newLogger(c, e.stdout) }}
}

// start is a setup.StartFunc: the member of the config setup wrote, run
// until ctx ends; the function it returns waits for it to have stopped.
func (s *setupMembers) start(ctx context.Context, path string, routes func(*echo.Echo)) (func(), error) {
	cfg, err := orders.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	m, err := startMember(ctx, cfg, s.log(cfg.Log), s.version, s.stop, routes)
	if err != nil {
		return nil, err
	}
	if s.started != nil {
		s.started(m)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := m.wait(ctx); err != nil {
			s.fail(err)
		}
	}()
	return func() { <-stopped }, nil
}

// outcome is what the command returns once setup's Run has returned
// err: that error, else a member's, else nil (SIGTERM).
func (s *setupMembers) outcome(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// stop ends the context withSetupMembers made: the boxes run under it
// and their members stop.
func (s *setupMembers) stop() { s.fail(nil) }

// announceMember announces a member of the box layout by mDNS (state
// member), so the console and the wizard of a new box see it.
func announceMember(box setup.Layout, version string, log *slog.Logger) *setup.Announcer {
	id, err := setup.LoadIdentity(box.SetupDir())
	if err != nil {
		log.Warn("mDNS: no setup identity", "error", err)
		return nil
	}
	cfg, err := orders.LoadConfig(box.ConfigPath())
	if err != nil {
		return nil
	}
	port := 80
	if _, p, err := net.SplitHostPort(cfg.HTTPAddr); err == nil {
		port, _ = strconv.Atoi(p)
	}
	a := setup.Announcement{ID: id.ID, State: setup.ModeMember, Version: version, Fingerprint: id.Fingerprint, Port: port,
		Member: memberTXT(box.ConfigPath())}
	ann, err := setup.Announce(a)
	if err != nil {
		log.Warn("mDNS: not announced yet (announced when the box has an address)", "error", err)
	}
	return ann
}

// startStore opens one node with the domain attached (both from one
// config file), mounts any extra routes, and starts it; ctx ends a start
// that waits for a peer's snapshot (no usable local one).
func startStore(ctx context.Context, cfg orders.FileConfig, log *slog.Logger, svcOpts orders.Options, routes ...func(*echo.Echo)) (*node.Node, *orders.Service, error) {
	return startStoreWith(ctx, cfg, log, svcOpts, nil, nil, routes...)
}

// startStoreWith is startStore with more set up on the node before the
// domain attaches (before, if set: the updates of a member).
func startStoreWith(ctx context.Context, cfg orders.FileConfig, log *slog.Logger, svcOpts orders.Options, updatePending func() bool, before func(*node.Node) error, routes ...func(*echo.Echo)) (*node.Node, *orders.Service, error) {
	opts := orders.NodeOptions()
	opts.Logger = log
	opts.UpdatePending = updatePending
	// The box keeps its clock right, forward only (node/clock.go): the
	// unit grants CAP_SYS_TIME for it.
	opts.ClockSetter = wallclock.System{}
	n, err := node.New(cfg.NodeConfig, opts)
	if err != nil {
		return nil, nil, err
	}
	if before != nil {
		if err := before(n); err != nil {
			n.Stop()
			return nil, nil, err
		}
	}
	if cfg.TLS.CAFile != "" {
		// Add and replace boxes from the console (the CA key the
		// wizard gave every member is beside the CA certificate).
		n.AddStaffRoutes(join.NewConsole(n, cfg, filepath.Dir(cfg.TLS.CAFile), log).Routes)
	}
	svcOpts.Pages = ui.Routes
	svc, err := orders.Attach(n, cfg.Config, svcOpts)
	if err != nil {
		n.Stop()
		return nil, nil, err
	}
	for _, r := range routes {
		r(n.Echo())
	}
	if err := n.StartContext(ctx); err != nil {
		return nil, nil, err
	}
	return n, svc, nil
}

// portOf is the port of a HOST:PORT setting (0 when there is none).
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// memberTXT is what a member adds to its mDNS announcement: its node id,
// its cluster's tag and its ports (node/peerfind), by which the other
// members find it when DHCP gives it a new address; nil when the config
// at path or its CA cannot be read.
func memberTXT(path string) []string {
	cfg, err := orders.LoadConfig(path)
	if err != nil {
		return nil
	}
	caPEM, err := os.ReadFile(cfg.TLS.CAFile)
	if err != nil {
		return nil
	}
	return peerfind.TXT(cfg.NodeID, peerfind.ClusterTag(caPEM), portOf(cfg.RaftAddr), portOf(cfg.HTTPSAddr))
}
