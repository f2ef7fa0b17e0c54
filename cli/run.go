package cli

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"

	"masterorder/node"
	"masterorder/node/lanname"
	"masterorder/node/watchdog"
	"masterorder/orders"
	"masterorder/setup"
)

// run: one box until SIGTERM, from --config, else from the box layout's
// config (/etc/masterorder/masterorder.toml), else in setup mode (package
// setup) until the wizard configures it, then as a member in the same
// process.
var runCommand = command{
	name: "run",
	usage: `masterorder run [--config node.toml]   (no config anywhere: setup mode)
      [--etc-dir DIR] [--state-dir DIR] [--boot-dir DIR] [--sys-root DIR] [--listen :80]
      [--https-port 443] [--raft-port 7000] [--claim-window 30m] [--window-from-start]
      [--probe HOST:PORT,...] [--mdns=true]
`,
	run: run,
}

func run(ctx context.Context, args []string, e env) error {
	fs := e.flags("run")
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
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path != "" {
		return runMember(ctx, *path, "", e)
	}
	log := newLogger(node.LogConfig{}, e.stdout)
	if reset, err := setup.BootReset(box); err != nil {
		return err
	} else if reset {
		log.Warn("factory reset done (the reset file was on the boot partition)")
	}
	if box.ModeOf() == setup.ModeMember {
		var ann *setup.Announcer
		if *mdns {
			ann = announceMember(box, e.build.Version, log)
		}
		defer ann.Close()
		return runMember(ctx, box.ConfigPath(), box.TLSDir(), e)
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
	ctx, members := withSetupMembers(ctx, e)
	defer members.stop()
	// systemd hears READY=1 once the setup page answers, and its watchdog
	// is fed while it does, then while the member's HTTP does.
	var dog *watchdog.Dog
	onMember := func(ctx context.Context, path string, routes func(*echo.Echo)) (func(), error) {
		if setupName != nil {
			setupName.Close()
		}
		stop, err := members.start(ctx, path, routes)
		if err == nil {
			if cfg, err := orders.LoadConfig(path); err == nil {
				dog.Watch(watchdog.HTTP(cfg.HTTPAddr, "/healthz"))
			}
		}
		return stop, err
	}
	b, err := setup.New(setup.Options{Layout: box, Listen: *listen, HTTPSPort: *httpsPort, RaftPort: *raftPort, Window: *window,
		WindowFromStart: *fromStart, Version: e.build.Version, Probe: peers, MDNS: *mdns, Logger: log, Start: onMember,
		MemberTXT: memberTXT})
	if err != nil {
		return err
	}
	if err := b.Listen(); err != nil {
		return err
	}
	dog = watchdog.Start(ctx, watchdog.HTTP(b.Addr(), "/setup/"), log)
	return members.outcome(ctx, b.Run(ctx))
}
