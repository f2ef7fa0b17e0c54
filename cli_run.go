package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"masterorder/node"
	"masterorder/node/lanname"
	"masterorder/node/watchdog"
	"masterorder/orders"
	"masterorder/setup"
)

// cmdRun runs one box until SIGTERM: from --config, else from the box
// layout's config (/etc/masterorder/masterorder.toml), else in setup mode
// (package setup) until the wizard configures it, then as a member in
// the same process.
func cmdRun(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "node config file (TOML); empty: the box layout's, or setup mode when there is none")
	box := setup.BoxLayout()
	fs.StringVar(&box.EtcDir, "etc-dir", box.EtcDir, "box layout: config, tls/ and setup-code (without --config)")
	fs.StringVar(&box.StateDir, "state-dir", box.StateDir, "box layout: store data and setup/ identity (without --config)")
	fs.StringVar(&box.BootDir, "boot-dir", box.BootDir, "the card's boot partition: masterorder-setup.txt, masterorder-factory-reset")
	fs.StringVar(&box.SysRoot, "sys-root", box.SysRoot, "where /proc and /sys are read (device tree, LED, uptime)")
	listen := fs.String("listen", ":80", "setup mode: the setup page and claim channel; its port is the box's HTTP port as a member")
	httpsPort := fs.Int("https-port", 443, "setup mode: the HTTPS port this box will serve as a member")
	raftPort := fs.Int("raft-port", 7000, "setup mode: the Raft port this box will use as a member")
	window := fs.Duration("claim-window", setup.DefaultWindow, "setup mode: how long after power-on the box may be claimed")
	fromStart := fs.Bool("window-from-start", false, "setup mode: open the claim window at process start, not at boot")
	probe := fs.String("probe", "", "setup mode: other boxes' setup addresses HOST:PORT,... to ask besides mDNS (loopback, tests)")
	mdns := fs.Bool("mdns", true, "announce this box and find others by mDNS / DNS-SD (_masterorder._tcp)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *path != "" {
		return runMember(ctx, *path, "", nil)
	}
	log := newLogger(node.LogConfig{}, os.Stdout)
	if reset, err := setup.BootReset(box); err != nil {
		return err
	} else if reset {
		log.Warn("factory reset done (the reset file was on the boot partition)")
	}
	if box.ModeOf() == setup.ModeMember {
		var ann *setup.Announcer
		if *mdns {
			ann = announceMember(box, log)
		}
		defer ann.Close()
		return runMember(ctx, box.ConfigPath(), box.TLSDir(), nil)
	}
	var peers []string
	for _, p := range strings.Split(*probe, ",") {
		if p = strings.TrimSpace(p); p != "" {
			peers = append(peers, p)
		}
	}
	// The owner's phone opens http://masterorder-setup.local/ (a QR code
	// in the owner's guide): every box in setup mode answers that name,
	// and any of them shows every box. A box stops answering it the
	// moment it becomes a member.
	var setupName *lanname.Answerer
	if *mdns {
		if a, err := lanname.Start(lanname.SetupName, nil, log); err != nil {
			log.Warn("mDNS: the setup name is not answered", "name", lanname.SetupName, "error", err)
		} else {
			setupName = a
			a.SetActive(true)
			defer a.Close()
		}
	}
	start := setupStart(log)
	// systemd hears READY=1 once the setup page answers, and its watchdog
	// is fed while it does, then while the member's HTTP does.
	var dog *watchdog.Dog
	onMember := func(ctx context.Context, path string, routes func(*echo.Echo)) (func(), error) {
		if setupName != nil {
			setupName.Close()
		}
		stop, err := start(ctx, path, routes)
		if err == nil {
			if cfg, err := orders.LoadConfig(path); err == nil {
				dog.Watch(watchdog.HTTP(cfg.HTTPAddr, "/healthz"))
			}
		}
		return stop, err
	}
	b, err := setup.New(setup.Options{Layout: box, Listen: *listen, HTTPSPort: *httpsPort, RaftPort: *raftPort, Window: *window,
		WindowFromStart: *fromStart, Version: version, Probe: peers, MDNS: *mdns, Logger: log, Start: onMember})
	if err != nil {
		return err
	}
	if err := b.Listen(); err != nil {
		return err
	}
	dog = watchdog.Start(ctx, watchdog.HTTP(b.Addr(), "/setup/"), log)
	return b.Run(ctx)
}

// runMember runs a member from its config file until ctx ends. tlsDir
// ("" = the config's CA file's directory) is where /ca.crt is served from.
func runMember(ctx context.Context, path, tlsDir string, w *setup.Wizard) error {
	cfg, err := orders.LoadConfig(path)
	if err != nil {
		return err
	}
	if tlsDir == "" && cfg.TLS.CAFile != "" {
		tlsDir = filepath.Dir(cfg.TLS.CAFile)
	}
	log := newLogger(cfg.Log, os.Stdout)
	memLimit := node.SetMemoryLimit()
	n, _, err := startStore(ctx, cfg, log, orders.Options{}, func(e *echo.Echo) { setup.MemberRoutes(e, tlsDir, w) })
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before start completed", "error", err)
			return nil // SIGTERM while waiting for a peer: a clean stop
		}
		return err
	}
	log.Info("node started", "node", cfg.NodeID, "http", cfg.HTTPAddr, "raft", cfg.RaftAddr, "version", version, "memory_limit_mib", memLimit>>20)
	// READY=1 to systemd, and its watchdog fed while /healthz answers.
	watchdog.Start(ctx, watchdog.HTTP(cfg.HTTPAddr, "/healthz"), log)
	select {
	case <-ctx.Done():
	case err := <-n.Fatal():
		// The box cannot recover in place (a card gone read-only for
		// good): exit non-zero so the unit restarts it or reboots.
		log.Error("exiting: the box cannot go on in place", "error", err)
		n.Stop()
		return err
	}
	log.Info("shutting down")
	n.Stop()
	return nil
}

// setupStart turns a configured setup box into a member in this process.
func setupStart(log *slog.Logger) setup.StartFunc {
	return func(ctx context.Context, path string, routes func(*echo.Echo)) (func(), error) {
		cfg, err := orders.LoadConfig(path)
		if err != nil {
			return nil, err
		}
		n, _, err := startStore(ctx, cfg, log, orders.Options{}, routes)
		if err != nil {
			return nil, err
		}
		log.Info("node started", "node", cfg.NodeID, "http", cfg.HTTPAddr, "raft", cfg.RaftAddr, "version", version)
		go func() {
			select {
			case <-n.Done():
			case err := <-n.Fatal():
				// As runMember: a card that stays read-only ends the
				// process non-zero so its unit (or a reboot) can act;
				// setup's Run has no error path once it became a member.
				log.Error("exiting: the box cannot go on in place", "error", err)
				n.Stop()
				os.Exit(1)
			}
		}()
		return n.Stop, nil
	}
}

// announceMember announces a member of the box layout by mDNS (state
// member), so the console and the wizard of a new box see it.
func announceMember(box setup.Layout, log *slog.Logger) *setup.Announcer {
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
	ann, err := setup.Announce(setup.Announcement{ID: id.ID, State: setup.ModeMember, Version: version, Fingerprint: id.Fingerprint, Port: port})
	if err != nil {
		log.Warn("mDNS: not announced yet (announced when the box has an address)", "error", err)
	}
	return ann
}

// startStore opens one node with the domain attached (both from one
// config file), mounts any extra routes, and starts it; ctx ends a start
// that waits for a peer's snapshot (no usable local one).
func startStore(ctx context.Context, cfg orders.FileConfig, log *slog.Logger, svcOpts orders.Options, routes ...func(*echo.Echo)) (*node.Node, *orders.Service, error) {
	opts := orders.NodeOptions()
	opts.Logger = log
	n, err := node.New(cfg.NodeConfig, opts)
	if err != nil {
		return nil, nil, err
	}
	if cfg.TLS.CAFile != "" {
		// Add and replace boxes from the console (the CA key the
		// wizard gave every member is beside the CA certificate).
		n.AddStaffRoutes(setup.NewConsole(n, cfg, filepath.Dir(cfg.TLS.CAFile), log).Routes)
	}
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

// cmdReset is the factory reset on the box: config, certificates, data
// and the setup identity go; the box starts in setup mode next time.
func cmdReset(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(stderr)
	yes := fs.Bool("yes", false, "really erase this box's store data and configuration")
	box := setup.BoxLayout()
	fs.StringVar(&box.EtcDir, "etc-dir", box.EtcDir, "box layout: config and tls/")
	fs.StringVar(&box.StateDir, "state-dir", box.StateDir, "box layout: store data and setup/ identity")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if !*yes {
		return usageError{"reset erases this box's orders, configuration and certificates; run it on the box (stopped) with --yes"}
	}
	if err := setup.FactoryReset(box); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "factory reset: %s and %s cleared; the box starts in setup mode (restart it: systemctl restart masterorder)\n", box.ConfigPath(), box.StateDir)
	return nil
}
