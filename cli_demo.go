package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("nodes", 3, "1 or 3 nodes")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP address of node a; node i listens on port+i")
	dataDir := fs.String("data-dir", "", "data directory (a temp dir if empty)")
	password := fs.String("staff-password", "demo", "staff password")
	setupMode := fs.Bool("setup", false, "start three unconfigured boxes (setup mode) and walk the setup wizard")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *setupMode {
		return demoSetup(ctx, *listen, *dataDir, stdout, stderr)
	}
	if *count != 1 && *count != 3 {
		return usageError{"--nodes must be 1 or 3"}
	}
	host, portStr, err := net.SplitHostPort(*listen)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port+*count+1000 > 65535 {
		return usageError{"--listen must be HOST:PORT"}
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		// The demo serves staff over plain HTTP with a known password:
		// fine on one laptop, not on a network anyone can join.
		fmt.Fprintf(stderr, "WARNING: demo listening on %s: anyone on this network can reach the staff console over plain HTTP", host)
		if *password == "demo" {
			fmt.Fprint(stderr, " with the password \"demo\"")
		}
		fmt.Fprintln(stderr, ". Use --listen 127.0.0.1:8080, or `masterorder init` for a real store.")
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "masterorder-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	hash, err := staffauth.HashPassword(*password)
	if err != nil {
		return usageError{"--staff-password: " + err.Error()}
	}
	cfgs, err := demoConfigs(dir, host, port, *count)
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
		n, svc, err := startStore(ctx, cfg, log, orders.Options{StaffPasswordHash: hash})
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

func demoConfigs(dir, host string, port, count int) ([]orders.FileConfig, error) {
	tlsDir := filepath.Join(dir, "tls")
	ca, err := pki.LoadCAFiles(tlsDir)
	if err != nil {
		// A throwaway cluster CA for this demo.
		if ca, err = pki.NewCA("MasterOrder demo", 0); err != nil {
			return nil, err
		}
		if err := ca.WriteFiles(tlsDir); err != nil {
			return nil, err
		}
	}
	secretFile := filepath.Join(dir, "secrets.json")
	var secrets struct{ Cluster, Token string }
	if b, err := os.ReadFile(secretFile); err == nil {
		json.Unmarshal(b, &secrets)
	}
	if secrets.Cluster == "" {
		secrets.Cluster, secrets.Token = staffauth.NewSecret(), staffauth.NewSecret()
		b, _ := json.Marshal(secrets)
		if err := os.WriteFile(secretFile, b, 0o600); err != nil {
			return nil, err
		}
	}
	var peers []node.Peer
	for i := 0; i < count; i++ {
		id := string(rune('a' + i))
		peers = append(peers, node.Peer{ID: id, HTTPAddr: net.JoinHostPort(host, strconv.Itoa(port+i)), RaftAddr: net.JoinHostPort(host, strconv.Itoa(port+1000+i))})
	}
	var cfgs []orders.FileConfig
	for _, p := range peers {
		cert, key, err := ca.IssueNode(p.ID, []string{host}, 0)
		if err != nil {
			return nil, err
		}
		if err := pki.WriteNodeFiles(tlsDir, p.ID, cert, key); err != nil {
			return nil, err
		}
		c := orders.FileDefaults()
		c.NodeID, c.ShopID, c.Demo = p.ID, "demo", true
		// The demo runs on one machine over plain HTTP, staff included.
		c.HTTP.AllowPlainStaff = true
		c.DataDir = filepath.Join(dir, "data-"+p.ID)
		c.HTTPAddr, c.RaftAddr = p.HTTPAddr, p.RaftAddr
		c.Peers = peers
		c.ClusterSecret, c.Staff.TokenSecret = secrets.Cluster, secrets.Token
		c.TLS = node.TLSConfig{CAFile: pki.CAFile(tlsDir), CertFile: pki.NodeCertFile(tlsDir, p.ID), KeyFile: pki.NodeKeyFile(tlsDir, p.ID)}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
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
func demoSetup(ctx context.Context, listen, dir string, stdout, stderr io.Writer) error {
	host, portStr, err := net.SplitHostPort(listen)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port+1002 > 65535 || port+httpsPortOffset+2 > 65535 {
		return usageError{"--listen must be HOST:PORT"}
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usageError{"demo --setup listens on loopback only (--listen 127.0.0.1:PORT): a real store's boxes run `masterorder run`"}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "masterorder-setup-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(port+i)))
	}
	log := newLogger(node.LogConfig{Level: "warn"}, stderr)
	errs := make(chan error, 3)
	for i, addr := range addrs {
		boxDir := filepath.Join(dir, "box-"+string(rune('1'+i)))
		layout := setup.Layout{EtcDir: filepath.Join(boxDir, "etc"), StateDir: filepath.Join(boxDir, "state"), BootDir: filepath.Join(boxDir, "boot"), SysRoot: filepath.Join(boxDir, "sys")}
		b, err := setup.New(setup.Options{Layout: layout, Listen: addr, HTTPSPort: port + httpsPortOffset + i, RaftPort: port + 1000 + i,
			WindowFromStart: true, Version: version, Probe: addrs, Logger: log, Start: setupStart(log)})
		if err != nil {
			return err
		}
		if err := b.Listen(); err != nil {
			return err
		}
		go func() { errs <- b.Run(ctx) }()
	}
	fmt.Fprintf(stdout, "MasterOrder setup demo: three unconfigured boxes, layouts in %s\n", dir)
	for _, a := range addrs {
		fmt.Fprintf(stdout, "  box in setup mode  http://%s/setup/\n", a)
	}
	fmt.Fprintf(stdout, "open the setup page: http://%s/setup/\n", addrs[0])
	fmt.Fprintf(stdout, "(the guest name masterorder.local needs mDNS on this machine; type %s as the guest name to open guest pages without it)\n", host)
	fmt.Fprintln(stdout, "Ctrl-C stops the boxes.")
	var first error
	for range addrs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
