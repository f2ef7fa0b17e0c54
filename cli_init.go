package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/setup/cluster"
)

type initNode struct {
	id, host, httpPort, raftPort, httpsPort string
}

// httpsPortOffset puts a box's HTTPS port next to its HTTP port
// (8080 → 8443) unless --nodes names one: ID=HOST:HTTP:RAFT:HTTPS.
const httpsPortOffset = 363

func parseInitNodes(spec string) ([]initNode, error) {
	var out []initNode
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		fields := strings.Split(addr, ":")
		if !ok || (len(fields) != 3 && len(fields) != 4) {
			return nil, usageError{fmt.Sprintf("--nodes: %q is not ID=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT]", part)}
		}
		if len(fields) == 3 {
			p, err := strconv.Atoi(fields[1])
			if err != nil || p < 1 || p+httpsPortOffset > 65535 {
				return nil, usageError{fmt.Sprintf("--nodes: %q: bad HTTP port", part)}
			}
			fields = append(fields, strconv.Itoa(p+httpsPortOffset))
		}
		if err := pki.ValidateNodeID(id); err != nil || seen[id] {
			return nil, usageError{fmt.Sprintf("--nodes: bad or repeated node id %q", id)}
		}
		seen[id] = true
		out = append(out, initNode{id: id, host: fields[0], httpPort: fields[1], raftPort: fields[2], httpsPort: fields[3]})
	}
	return out, nil
}

// staffPassword hashes a given password after init's strength check, or
// makes a random one (printed by the caller).
func staffPassword(flagName, pw string) (hash, plain string, printed bool, err error) {
	hash, plain, printed, err = cluster.Password(pw)
	if err != nil {
		return "", "", false, usageError{flagName + ": " + err.Error()}
	}
	return hash, plain, printed, nil
}

// initBox is an init node as the cluster package names a box.
func (n initNode) box(plain bool) cluster.Box {
	b := cluster.Box{ID: n.id, Host: n.host, HTTPPort: n.httpPort, RaftPort: n.raftPort}
	if !plain {
		b.HTTPSPort = n.httpsPort
	}
	return b
}

// writeBox writes a box's TLS files into dir/tls and its config into
// dir/ID.toml, pointed at dir (or, with systemd, at the box layout).
func writeBox(dir string, b cluster.Bundle, systemd bool, header string) error {
	tlsDir := filepath.Join(dir, "tls")
	delete(b.Files, "ca.pem") // init writes the CA itself, key beside it
	if err := b.WriteTLS(tlsDir); err != nil {
		return fmt.Errorf("write certificates for %s: %w", b.Config.NodeID, err)
	}
	c := b.Config
	c.UseLayout(tlsDir, filepath.Join(dir, "data-"+c.NodeID))
	if systemd {
		c.UseLayout(filepath.Join(boxEtc, "tls"), boxDataDir)
	}
	raw, err := c.Marshal(header)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, c.NodeID+".toml"), raw, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shop := fs.String("shop-id", "", "shop id ([A-Za-z0-9_-])")
	nodesSpec := fs.String("nodes", "", "a=HOST:HTTPPORT:RAFTPORT,b=…")
	out := fs.String("out", "", "output directory")
	password := fs.String("staff-password", "", "manager password (random if empty; at least 10 characters, not a common word)")
	kitchenPassword := fs.String("kitchen-password", "", "kitchen screens' password (random if empty)")
	plainHTTP := fs.Bool("plain-http", false, "no HTTPS listener; staff and kitchen over plain HTTP (labs only)")
	publicURL := fs.String("public-url", "", "the one address guests are given (QR codes); its host goes into the HTTPS certificates")
	force := fs.Bool("force", false, "overwrite existing configs")
	systemd := fs.Bool("systemd", false, "write configs for the box layout ("+boxEtc+", "+boxDataDir+") and a systemd unit per node")
	addNode := fs.String("add-node", "", "ID=HOST:HTTPPORT:RAFTPORT: a config and certificate for a box joining the cluster in --out")
	renew := fs.Bool("renew-https", false, "issue fresh HTTPS certificates for every box config in --out (they last 800 days)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *renew {
		if *out == "" {
			return usageError{"init --renew-https needs --out (the directory init wrote)"}
		}
		return renewHTTPS(*out, stdout)
	}
	if *addNode != "" {
		if *out == "" {
			return usageError{"init --add-node needs --out (the directory init wrote)"}
		}
		return initAddNode(*addNode, *out, *systemd, *force, stdout)
	}
	if *shop == "" || *nodesSpec == "" || *out == "" {
		return usageError{"init needs --shop-id, --nodes and --out"}
	}
	nodes, err := parseInitNodes(*nodesSpec)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, n := range nodes {
		p := filepath.Join(dir, n.id+".toml")
		if _, err := os.Stat(p); err == nil && !*force {
			return usageError{fmt.Sprintf("%s exists (use --force to overwrite)", p)}
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if *password != "" && *password == *kitchenPassword {
		return usageError{"--kitchen-password must differ from --staff-password (a kitchen login would be a manager login)"}
	}
	hash, pw, printed, err := staffPassword("--staff-password", *password)
	if err != nil {
		return err
	}
	kitchenHash, kpw, kprinted, err := staffPassword("--kitchen-password", *kitchenPassword)
	if err != nil {
		return err
	}
	cl, err := cluster.New(*shop)
	if err != nil {
		return usageError{"--shop-id: " + err.Error()}
	}
	cl.StaffPasswordHash, cl.KitchenPasswordHash, cl.PublicURL, cl.PlainHTTP = hash, kitchenHash, *publicURL, *plainHTTP
	tlsDir := filepath.Join(dir, "tls")
	if err := cl.CA.WriteFiles(tlsDir); err != nil {
		return fmt.Errorf("write cluster CA: %w", err)
	}
	// The certificate staff tablets and kitchen screens install once.
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), cl.CA.CertPEM(), 0o644); err != nil {
		return fmt.Errorf("write ca.crt: %w", err)
	}
	var boxes []cluster.Box
	for _, n := range nodes {
		boxes = append(boxes, n.box(*plainHTTP))
	}
	peers := cl.Peers(boxes)
	for _, b := range boxes {
		bundle, err := cl.Bundle(b, peers, false, false)
		if err != nil {
			return err
		}
		if err := writeBox(dir, bundle, *systemd, "# masterorder node "+b.ID+" — written by `masterorder init`; see config.example.toml for every setting.\n"); err != nil {
			return err
		}
		if *systemd {
			if err := writeSystemdUnit(dir, b.ID); err != nil {
				return fmt.Errorf("write systemd unit: %w", err)
			}
		}
	}
	fmt.Fprintf(stdout, "wrote %d node configs, the cluster CA and node certificates to %s\n", len(nodes), dir)
	for _, n := range nodes {
		if *systemd {
			fmt.Fprintf(stdout, "  box %s: %s.toml, masterorder-%s.service, tls/{ca.pem,%s.pem,%s-key.pem}\n", n.id, n.id, n.id, n.id, n.id)
			continue
		}
		fmt.Fprintf(stdout, "  masterorder run --config %s\n", filepath.Join(dir, n.id+".toml"))
	}
	if *systemd {
		fmt.Fprintf(stdout, "keep tls/ca-key.pem off the boxes (init --add-node needs it for a replacement box)\n")
	}
	if !*plainHTTP {
		fmt.Fprintf(stdout, "install %s once on every staff tablet and kitchen screen (docs/operations.md: \"Staff over HTTPS\"); staff use https://HOST:%s/staff/\n",
			filepath.Join(dir, "ca.crt"), nodes[0].httpsPort)
	}
	if printed {
		fmt.Fprintf(stdout, "staff password: %s\n", pw)
	}
	if kprinted {
		fmt.Fprintf(stdout, "kitchen password: %s\n", kpw)
	}
	return nil
}

// renewHTTPS re-issues each box's HTTPS certificate (same names: its
// https_addr host and public_url's host) under the cluster CA in DIR/tls.
// Copy the new tls/ID-https*.pem to each box and restart it.
func renewHTTPS(dir string, stdout io.Writer) error {
	tlsDir := filepath.Join(dir, "tls")
	ca, err := pki.LoadCAFiles(tlsDir)
	if err != nil {
		return usageError{"--renew-https needs the cluster CA that init wrote in " + tlsDir + ": " + err.Error()}
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return err
	}
	renewed := 0
	for _, p := range paths {
		c, err := orders.LoadConfig(p)
		if err != nil || c.HTTPSAddr == "" {
			continue
		}
		host, _, _ := net.SplitHostPort(c.HTTPSAddr)
		cert, key, err := cluster.IssueHTTPS(ca, c.NodeID, host, c.PublicURL)
		if err != nil {
			return err
		}
		if err := pki.WriteHTTPSFiles(tlsDir, c.NodeID, cert, key); err != nil {
			return err
		}
		renewed++
		fmt.Fprintf(stdout, "  %s: %s\n", c.NodeID, pki.HTTPSCertFile(tlsDir, c.NodeID))
	}
	if renewed == 0 {
		return usageError{"--renew-https: no box config with https_addr in " + dir}
	}
	fmt.Fprintf(stdout, "renewed %d HTTPS certificates; copy them to the boxes and restart each\n", renewed)
	return nil
}

// The layout `init --systemd` writes configs for.
const (
	// A binary copied by hand goes where the package manager never
	// writes (docs/operations.md, step 3). A box with the Debian package
	// has /usr/bin/masterorder and the package's own unit, which runs
	// /etc/masterorder/masterorder.toml: it needs no unit from init.
	boxBinary  = "/usr/local/bin/masterorder"
	boxEtc     = "/etc/masterorder"
	boxDataDir = "/var/lib/masterorder" // StateDirectory=masterorder
	boxUser    = "masterorder"
)

// writeSystemdUnit writes DIR/masterorder-<id>.service. Its [Service]
// section is the Debian package's unit (build/deb/masterorder.service)
// but for what is per box: ExecStart names the box's config,
// SyslogIdentifier the box, and there is no ReadWritePaths, because a
// node run with --config never enters setup mode, so it neither writes
// /etc/masterorder (only claiming a box does) nor blinks the LED (the
// wizard's identify button); /etc stays read-only for it.
// TestInitUnitMatchesPackagedUnit keeps the two in step.
func writeSystemdUnit(dir, id string) error {
	unit := fmt.Sprintf(`# MasterOrder store node %[1]s — written by masterorder init --systemd.
# Install on box %[1]s (see docs/operations.md, "A three-Pi store, start to finish"):
#   useradd --system --home-dir %[4]s --shell /usr/sbin/nologin %[5]s
#   install -m 0755 masterorder %[2]s
#   install -d -m 0750 -g %[5]s %[3]s %[3]s/tls
#   install -m 0640 -g %[5]s %[1]s.toml %[3]s/%[1]s.toml
#   install -m 0640 -g %[5]s tls/ca.pem tls/%[1]s.pem tls/%[1]s-key.pem tls/%[1]s-https*.pem %[3]s/tls/
#   install -m 0644 masterorder-%[1]s.service /etc/systemd/system/
#   systemctl daemon-reload && systemctl enable --now masterorder-%[1]s
# Logs: journalctl -u masterorder-%[1]s (JSON lines).
# A box with the Debian package installed needs no such unit: install
# %[1]s.toml as %[3]s/masterorder.toml and systemctl restart masterorder.

[Unit]
Description=MasterOrder store node %[1]s
Wants=network-online.target
After=network-online.target
# The box needs no internet and no correct clock: no time-sync dependency.
StartLimitIntervalSec=0

[Service]
# notify: the process says READY=1 once its HTTP answers (setup page or
# member), and feeds the watchdog every 10 s after a local GET /healthz
# (node/watchdog). A stopped, deadlocked or wedged process stops feeding
# and is aborted and restarted 30 s later. 30 s: a Pi 3B+ at a lunch peak
# answers that request in well under a second even through a GC pause or
# an SD card's fsync stall, so two checks may fail before systemd acts;
# shorter gains little, since the other two boxes take the orders
# (a new leader within about 2 s) while this one restarts.
Type=notify
WatchdogSec=30s
# A member's start waits for a peer's snapshot when it has no usable one
# of its own; past this it is restarted and asks again.
TimeoutStartSec=5min
# A watchdog abort (SIGABRT) or a panic dumps every goroutine to the
# journal and ends the process by the signal: Go's own exit status for
# both is 2, which RestartPreventExitStatus below would take for a bad
# config and never restart.
Environment=GOTRACEBACK=crash
User=%[5]s
Group=%[5]s
ExecStart=%[2]s run --config %[3]s/%[1]s.toml
# After every end of the process (a stop, the watchdog, a crash) its
# result ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS) is recorded in the
# state dir: the console's Boxes page tells why the box last restarted.
# "-": a failure here never fails the unit.
ExecStopPost=-%[2]s stopped --config %[3]s/%[1]s.toml
StateDirectory=masterorder
StateDirectoryMode=0750
WorkingDirectory=%[4]s
# SIGTERM stops the node cleanly; it stays a member of the cluster.
KillSignal=SIGTERM
TimeoutStopSec=30s
Restart=on-failure
RestartSec=2s
# Exit 2 is a bad config or command line: restarting will not fix it.
RestartPreventExitStatus=2
StandardOutput=journal
StandardError=journal
SyslogIdentifier=masterorder-%[1]s
LimitNOFILE=65536
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
# No ReadWritePaths: this node never writes %[3]s (only setup mode does).
# AF_NETLINK: Go lists network interfaces through netlink (mdns_name is
# answered on each of them).
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK
# Ports below 1024 (80, 443) as a non-root user; the bounding set also
# takes every other capability away.
AmbientCapabilities=CAP_NET_BIND_SERVICE
CapabilityBoundingSet=CAP_NET_BIND_SERVICE

[Install]
WantedBy=multi-user.target
`, id, boxBinary, boxEtc, boxDataDir, boxUser)
	return os.WriteFile(filepath.Join(dir, "masterorder-"+id+".service"), []byte(unit), 0o644)
}

// initAddNode writes a config (join = true) and a certificate for a box
// that joins the existing cluster whose configs and CA are in dir.
func initAddNode(spec, dir string, systemd, force bool, stdout io.Writer) error {
	nodes, err := parseInitNodes(spec)
	if err != nil {
		return err
	}
	if len(nodes) != 1 {
		return usageError{"--add-node takes one ID=HOST:HTTPPORT:RAFTPORT"}
	}
	nn := nodes[0]
	tlsDir := filepath.Join(dir, "tls")
	ca, err := pki.LoadCAFiles(tlsDir)
	if err != nil {
		return usageError{"--add-node needs the cluster CA that init wrote in " + tlsDir + ": " + err.Error()}
	}
	existing, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return err
	}
	var base orders.FileConfig
	found := false
	for _, p := range existing {
		if filepath.Base(p) == nn.id+".toml" {
			continue
		}
		if c, err := orders.LoadConfig(p); err == nil {
			base, found = c, true
			break
		}
	}
	if !found {
		return usageError{"--add-node: no existing node config in " + dir}
	}
	out := filepath.Join(dir, nn.id+".toml")
	if _, err := os.Stat(out); err == nil && !force {
		return usageError{fmt.Sprintf("%s exists (use --force to overwrite)", out)}
	}
	plain := base.HTTPSAddr == "" // the new box serves what the others do
	self := nn.box(plain)
	bundle, err := cluster.FromMember(base, ca).AddBox(self, base.Peers, false)
	if err != nil {
		return usageError{"--add-node: " + err.Error()}
	}
	peers := bundle.Config.Peers
	delete(bundle.Files, "ca.pem")
	if err := writeBox(dir, bundle, systemd, "# masterorder node "+nn.id+" — joins the existing cluster (written by `masterorder init --add-node`).\n"); err != nil {
		return err
	}
	if systemd {
		if err := writeSystemdUnit(dir, nn.id); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s and the certificate for %s in %s\n", out, nn.id, tlsDir)
	fmt.Fprintf(stdout, "start it, then add it from any member:\n  masterorder members add --url http://%s --id %s --raft-addr %s --http-addr %s\n",
		peers[0].HTTPAddr, nn.id, bundle.Config.RaftAddr, bundle.Config.HTTPAddr)
	return nil
}
