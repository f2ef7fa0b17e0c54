package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/orders/staffauth"
	"masterorder/setup"
	"masterorder/setup/cluster"
)

// demo: a whole store on this machine, or (--setup) three unconfigured
// boxes to walk the setup wizard with.
var demoCommand = command{
	name: "demo",
	usage: `masterorder demo [--nodes 1|3] [--listen 127.0.0.1:8080] [--data-dir DIR] [--staff-password PW]
masterorder demo --setup [--listen 127.0.0.1:8080] [--data-dir DIR]   (three unconfigured boxes: walk the setup wizard)
`,
	run: demo,
}

func demo(ctx context.Context, args []string, e env) error {
	fs := e.flags("demo")
	count := fs.Int("nodes", 3, "1 or 3 nodes")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP address of node a; node i listens on port+i")
	dataDir := fs.String("data-dir", "", "data directory (a temp dir if empty)")
	password := fs.String("staff-password", "demo", "staff password")
	setupMode := fs.Bool("setup", false, "start three unconfigured boxes (setup mode) and walk the setup wizard")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *setupMode {
		return demoSetup(ctx, *listen, *dataDir, e)
	}
	if *count != 1 && *count != 3 {
		return badUsage("--nodes must be 1 or 3")
	}
	host, port, err := demoListen(*listen, *count+1000)
	if err != nil {
		return err
	}
	stdout, stderr := e.stdout, e.stderr
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		// The demo serves staff over plain HTTP with a known password:
		// fine on one laptop, not on a network anyone can join.
		fmt.Fprintf(stderr, "WARNING: demo listening on %s: anyone on this network can reach the staff console over plain HTTP", host)
		if *password == "demo" {
			fmt.Fprint(stderr, " with the password \"demo\"")
		}
		fmt.Fprintln(stderr, ". Use --listen 127.0.0.1:8080, or `masterorder init` for a real store.")
	}
	dir, cleanup, err := demoDir(*dataDir, "masterorder-demo-")
	if err != nil {
		return err
	}
	defer cleanup()
	hash, err := staffauth.HashPassword(*password)
	if err != nil {
		return badFlag("--staff-password", err)
	}
	cfgs, err := demoConfigs(dir, host, port, *count, hash)
	if err != nil {
		return err
	}
	log := newLogger(node.LogConfig{Level: "warn"}, stderr)
	var nodes []*node.Node
	var svcs []*orders.Service
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for _, cfg := range cfgs {
		n, svc, err := startStore(ctx, cfg, log, orders.Options{})
		if err != nil {
			return err
		}
		nodes, svcs = append(nodes, n), append(svcs, svc)
	}
	leader := waitDemoLeader(ctx, nodes)
	if leader < 0 {
		return fmt.Errorf("no leader elected")
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sessionID, pin, err := svcs[leader].SeedDemo(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("seed demo: %w", err)
	}
	base := "http://" + cfgs[0].HTTPAddr
	fmt.Fprintf(stdout, "MasterOrder demo: %d node(s), data in %s\n", len(nodes), dir)
	for _, c := range cfgs {
		fmt.Fprintf(stdout, "  node %s  http://%s  (raft %s)\n", c.NodeID, c.HTTPAddr, c.RaftAddr)
	}
	fmt.Fprintf(stdout, "staff:   %s/staff/   (password %q)\n", base, *password)
	fmt.Fprintf(stdout, "kitchen: %s/kitchen/\n", base)
	fmt.Fprintf(stdout, "guest:   %s/guest/?s=%s\n", base, sessionID)
	fmt.Fprintf(stdout, "table T1 session %s  PIN %s\n", sessionID, pin)
	fmt.Fprintln(stdout, "Ctrl-C stops the store.")
	<-ctx.Done()
	return nil
}

// demoListen reads --listen as HOST:PORT, with room above PORT for the
// ports the demo adds to it (up to PORT+span).
func demoListen(listen string, span int) (host string, port int, err error) {
	host, portStr, err := net.SplitHostPort(listen)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port+span > 65535 {
		return "", 0, badUsage("--listen must be HOST:PORT")
	}
	return host, port, nil
}

// demoDir is --data-dir, or a temporary directory that cleanup removes.
func demoDir(dir, tempPrefix string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o700)
	}
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// demoConfigs makes the demo store's configs the way init and the setup
// wizard make a store's (cluster.Bundle): node i of count serves HTTP on
// port+i and Raft on port+1000+i, staff over plain HTTP with the
// password hash given. A --data-dir used before keeps its CA and secrets.
func demoConfigs(dir, host string, port, count int, staffHash string) ([]orders.FileConfig, error) {
	tlsDir := filepath.Join(dir, "tls")
	ca, err := pki.LoadCAFiles(tlsDir)
	if err != nil {
		// A throwaway cluster CA for this demo.
		if ca, err = pki.NewCA("MasterOrder demo", 0); err != nil {
			return nil, err
		}
	}
	secrets, err := demoSecrets(filepath.Join(dir, "secrets.json"))
	if err != nil {
		return nil, err
	}
	// The demo runs on one machine over plain HTTP, staff included.
	cl := &cluster.Cluster{CA: ca, ShopID: "demo", ClusterSecret: secrets.Cluster, TokenSecret: secrets.Token,
		StaffPasswordHash: staffHash, PlainHTTP: true}
	var boxes []cluster.Box
	for i, id := range cluster.NodeIDs(count) {
		boxes = append(boxes, cluster.Box{ID: id, Host: host, HTTPPort: strconv.Itoa(port + i), RaftPort: strconv.Itoa(port + 1000 + i)})
	}
	peers := cl.Peers(boxes)
	var cfgs []orders.FileConfig
	for _, b := range boxes {
		// The CA key goes beside its certificate, so that the next run
		// on this --data-dir keeps the CA.
		bundle, err := cl.Bundle(b, peers, false, true)
		if err != nil {
			return nil, err
		}
		if err := bundle.WriteTLS(tlsDir); err != nil {
			return nil, err
		}
		bundle.Config.UseLayout(tlsDir, filepath.Join(dir, "data-"+b.ID))
		raw, err := bundle.Config.Marshal("")
		if err != nil {
			return nil, err
		}
		c, err := orders.ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
}

// demoSecrets are the demo's cluster and token secrets, kept in path so
// that the next run on the same --data-dir has the same ones.
func demoSecrets(path string) (secrets struct{ Cluster, Token string }, err error) {
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &secrets)
	}
	if secrets.Cluster == "" {
		secrets.Cluster, secrets.Token = staffauth.NewSecret(), staffauth.NewSecret()
		b, _ := json.Marshal(secrets)
		err = os.WriteFile(path, b, 0o600)
	}
	return secrets, err
}

func waitDemoLeader(ctx context.Context, nodes []*node.Node) int {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i, n := range nodes {
			if n.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// demoSetup starts three boxes in setup mode on loopback, each with its
// own box layout under dir, finding each other through the probe list
// (multicast rarely reaches loopback), and prints the wizard's address.
func demoSetup(ctx context.Context, listen, dir string, e env) error {
	host, port, err := demoListen(listen, max(1002, httpsPortOffset+2))
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return badUsage("demo --setup listens on loopback only (--listen 127.0.0.1:PORT): a real store's boxes run `masterorder run`")
	}
	dir, cleanup, err := demoDir(dir, "masterorder-setup-demo-")
	if err != nil {
		return err
	}
	defer cleanup()
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(port+i)))
	}
	log := newLogger(node.LogConfig{Level: "warn"}, e.stderr)
	ctx, members := withSetupMembers(ctx, e)
	defer members.stop()
	members.log = func(node.LogConfig) *slog.Logger { return log }
	errs := make(chan error, 3)
	for i, addr := range addrs {
		boxDir := filepath.Join(dir, "box-"+strconv.Itoa(i+1))
		layout := setup.Layout{EtcDir: filepath.Join(boxDir, "etc"), StateDir: filepath.Join(boxDir, "state"), BootDir: filepath.Join(boxDir, "boot"), SysRoot: filepath.Join(boxDir, "sys")}
		b, err := setup.New(setup.Options{Layout: layout, Listen: addr, HTTPSPort: port + httpsPortOffset + i, RaftPort: port + 1000 + i,
			WindowFromStart: true, Version: e.build.Version, Probe: addrs, Logger: log, Start: members.start})
		if err != nil {
			return err
		}
		if err := b.Listen(); err != nil {
			return err
		}
		go func() { errs <- b.Run(ctx) }()
	}
	stdout := e.stdout
	fmt.Fprintf(stdout, "MasterOrder setup demo: three unconfigured boxes, layouts in %s\n", dir)
	for _, a := range addrs {
		fmt.Fprintf(stdout, "  box in setup mode  http://%s/setup/\n", a)
	}
	fmt.Fprintf(stdout, "open the setup page: http://%s/setup/\n", addrs[0])
	// The guest name must end in .local (every box's config check says
	// so); without mDNS the box's own address still opens the guest page.
	fmt.Fprintf(stdout, "(guests' QR codes name masterorder.local, which needs mDNS on this machine; without it, open the address the staff screen prints under each table's QR code, http://%s/guest/?s=…)\n", addrs[0])
	fmt.Fprintln(stdout, "Ctrl-C stops the boxes.")
	var first error
	for range addrs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return members.outcome(ctx, first)
}
