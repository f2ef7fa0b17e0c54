package cli

import (
	"context"
	"errors"
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
			return nil, badUsage(fmt.Sprintf("--nodes: %q is not ID=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT]", part))
		}
		if len(fields) == 3 {
			p, err := strconv.Atoi(fields[1])
			if err != nil || p < 1 || p+httpsPortOffset > 65535 {
				return nil, badUsage(fmt.Sprintf("--nodes: %q: bad HTTP port", part))
			}
			fields = append(fields, strconv.Itoa(p+httpsPortOffset))
		}
		if err := pki.ValidateNodeID(id); err != nil || seen[id] {
			return nil, badUsage(fmt.Sprintf("--nodes: bad or repeated node id %q", id))
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
		return "", "", false, badFlag(flagName, err)
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
	delete(b.Files, filepath.Base(pki.CAFile(tlsDir))) // init writes the CA itself, key beside it
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

// init: the configs, certificates and secrets of a store, or of one more
// box (--add-node), or fresh HTTPS certificates (--renew-https).
var initCommand = command{
	name: "init",
	usage: `masterorder init --shop-id ID --nodes a=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT],... --out DIR
      [--staff-password PW] [--kitchen-password PW] [--public-url URL]
      [--plain-http] [--force] [--systemd]
masterorder init --add-node ID=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT] --out DIR [--systemd] [--force]
masterorder init --renew-https --out DIR   (fresh 800-day HTTPS certificates for every box)
`,
	run: initStore,
}

func initStore(_ context.Context, args []string, e env) error {
	fs := e.flags("init")
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
	if err := parse(fs, args); err != nil {
		return err
	}
	stdout := e.stdout
	if *renew {
		if *out == "" {
			return badUsage("init --renew-https needs --out (the directory init wrote)")
		}
		return renewHTTPS(*out, stdout)
	}
	if *addNode != "" {
		if *out == "" {
			return badUsage("init --add-node needs --out (the directory init wrote)")
		}
		return initAddNode(*addNode, *out, *systemd, *force, stdout)
	}
	if *shop == "" || *nodesSpec == "" || *out == "" {
		return badUsage("init needs --shop-id, --nodes and --out")
	}
	nodes, err := parseInitNodes(*nodesSpec)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return usageError{err}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, n := range nodes {
		p := filepath.Join(dir, n.id+".toml")
		if _, err := os.Stat(p); err == nil && !*force {
			return badUsage(fmt.Sprintf("%s exists (use --force to overwrite)", p))
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if *password != "" && *password == *kitchenPassword {
		return badFlag("--kitchen-password", cluster.ErrSamePasswords)
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
		return badFlag("--shop-id", err)
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
// https_addr host, public_url's host and mdns_name) under the cluster CA
// in DIR/tls.
// Copy the new tls/ID-https*.pem to each box: a running box serves the
// new pair from its next hourly check (node/certrenew), no restart.
func renewHTTPS(dir string, stdout io.Writer) error {
	tlsDir, ca, boxes, err := readInitDir(dir, "--renew-https")
	if err != nil {
		return err
	}
	renewed := 0
	for _, b := range boxes {
		c := b.cfg
		if c.HTTPSAddr == "" {
			continue
		}
		host, _, _ := net.SplitHostPort(c.HTTPSAddr)
		cert, key, err := cluster.IssueHTTPS(ca, c.NodeID, host, c.PublicURL, c.MDNSName)
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
		return badUsage("--renew-https: no box config with https_addr in " + dir)
	}
	fmt.Fprintf(stdout, "renewed %d HTTPS certificates; copy them to the boxes (each serves its new one within the hour, no restart)\n", renewed)
	return nil
}

// initAddNode writes a config (join = true) and a certificate for a box
// that joins the existing cluster whose configs and CA are in dir.
func initAddNode(spec, dir string, systemd, force bool, stdout io.Writer) error {
	nodes, err := parseInitNodes(spec)
	if err != nil {
		return err
	}
	if len(nodes) != 1 {
		return badUsage("--add-node takes one ID=HOST:HTTPPORT:RAFTPORT")
	}
	nn := nodes[0]
	tlsDir, ca, boxes, err := readInitDir(dir, "--add-node")
	if err != nil {
		return err
	}
	out := filepath.Join(dir, nn.id+".toml")
	var base orders.FileConfig
	found := false
	for _, b := range boxes {
		if b.path != out {
			base, found = b.cfg, true
			break
		}
	}
	if !found {
		return badUsage("--add-node: no existing node config in " + dir)
	}
	if _, err := os.Stat(out); err == nil && !force {
		return badUsage(fmt.Sprintf("%s exists (use --force to overwrite)", out))
	}
	plain := base.HTTPSAddr == "" // the new box serves what the others do
	self := nn.box(plain)
	bundle, err := cluster.FromMember(base, ca).AddBox(self, base.Peers, false)
	if err != nil {
		return badFlag("--add-node", err)
	}
	peers := bundle.Config.Peers
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

// initBoxConfig is a box config in a directory init wrote.
type initBoxConfig struct {
	path string
	cfg  orders.FileConfig
}

// readInitDir reads a directory init wrote, for flag: its cluster CA in
// DIR/tls (with the key, to issue certificates) and the box configs in
// it that load, by file name.
func readInitDir(dir, flag string) (tlsDir string, ca *pki.CA, boxes []initBoxConfig, err error) {
	tlsDir = filepath.Join(dir, "tls")
	if ca, err = pki.LoadCAFiles(tlsDir); err != nil {
		return "", nil, nil, badUsage(flag + " needs the cluster CA that init wrote in " + tlsDir + ": " + err.Error())
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return "", nil, nil, err
	}
	for _, p := range paths {
		if c, err := orders.LoadConfig(p); err == nil {
			boxes = append(boxes, initBoxConfig{p, c})
		}
	}
	return tlsDir, ca, boxes, nil
}
