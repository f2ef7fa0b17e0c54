package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/orders/staffauth"
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

// initConfig is what init writes: the settings a node needs, commented
// defaults for the rest live in config.example.toml.
type initConfig struct {
	NodeID        string      `toml:"node_id"`
	ShopID        string      `toml:"shop_id"`
	DataDir       string      `toml:"data_dir"`
	HTTPAddr      string      `toml:"http_addr"`
	RaftAddr      string      `toml:"raft_addr"`
	ClusterSecret string      `toml:"cluster_secret"`
	Join          bool        `toml:"join,omitempty"`
	HTTPSAddr     string      `toml:"https_addr,omitempty"`
	PublicURL     string      `toml:"public_url,omitempty"`
	Peers         []node.Peer `toml:"peers"`
	HTTP          struct {
		AllowPlainStaff bool `toml:"allow_plain_staff"`
	} `toml:"http"`
	Staff struct {
		PasswordHash        string `toml:"password_hash"`
		TokenSecret         string `toml:"token_secret"`
		KitchenPasswordHash string `toml:"kitchen_password_hash"`
	} `toml:"staff"`
	TLS node.TLSConfig `toml:"tls"`
}

// boxTLS names a box's files in tlsDir; the HTTPS pair only when it serves
// HTTPS.
func boxTLS(tlsDir, id string, https bool) node.TLSConfig {
	t := node.TLSConfig{CAFile: pki.CAFile(tlsDir), CertFile: pki.NodeCertFile(tlsDir, id), KeyFile: pki.NodeKeyFile(tlsDir, id)}
	if https {
		t.HTTPSCertFile, t.HTTPSKeyFile = pki.HTTPSCertFile(tlsDir, id), pki.HTTPSKeyFile(tlsDir, id)
	}
	return t
}

// issueBox writes a box's cluster certificate and, unless plain, its HTTPS
// certificate naming its host and the public URL's host.
func issueBox(ca *pki.CA, tlsDir string, n initNode, publicURL string, plain bool) error {
	cert, key, err := ca.IssueNode(n.id, []string{n.host}, 0)
	if err != nil {
		return fmt.Errorf("issue certificate for %s: %w", n.id, err)
	}
	if err := pki.WriteNodeFiles(tlsDir, n.id, cert, key); err != nil {
		return fmt.Errorf("write certificate for %s: %w", n.id, err)
	}
	if plain {
		return nil
	}
	hosts := []string{n.host, "localhost", "127.0.0.1"}
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	cert, key, err = ca.IssueHTTPS(n.id, hosts)
	if err != nil {
		return fmt.Errorf("issue HTTPS certificate for %s: %w", n.id, err)
	}
	return pki.WriteHTTPSFiles(tlsDir, n.id, cert, key)
}

// staffPassword hashes a given password after the strength check, or
// makes a random one (printed by the caller).
func staffPassword(flagName, pw string) (hash, plain string, printed bool, err error) {
	if pw == "" {
		pw, printed = staffauth.NewSecret()[:16], true
	} else if err := staffauth.CheckStrength(pw); err != nil {
		return "", "", false, usageError{flagName + ": " + strings.TrimPrefix(err.Error(), "staffauth: ") + " (a guest on the Wi-Fi would guess it)"}
	}
	hash, err = staffauth.HashPassword(pw)
	if err != nil {
		return "", "", false, usageError{flagName + ": " + err.Error()}
	}
	return hash, pw, printed, nil
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
	ca, err := pki.NewCA("MasterOrder "+*shop, 0)
	if err != nil {
		return fmt.Errorf("create cluster CA: %w", err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := ca.WriteFiles(tlsDir); err != nil {
		return fmt.Errorf("write cluster CA: %w", err)
	}
	// The certificate staff tablets and kitchen screens install once.
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM(), 0o644); err != nil {
		return fmt.Errorf("write ca.crt: %w", err)
	}
	var peers []node.Peer
	for _, n := range nodes {
		p := node.Peer{ID: n.id, HTTPAddr: net.JoinHostPort(n.host, n.httpPort), RaftAddr: net.JoinHostPort(n.host, n.raftPort)}
		if !*plainHTTP {
			p.HTTPSAddr = net.JoinHostPort(n.host, n.httpsPort)
		}
		peers = append(peers, p)
	}
	clusterSecret, tokenSecret := staffauth.NewSecret(), staffauth.NewSecret()
	for i, n := range nodes {
		if err := issueBox(ca, tlsDir, n, *publicURL, *plainHTTP); err != nil {
			return err
		}
		c := initConfig{NodeID: n.id, ShopID: *shop, DataDir: filepath.Join(dir, "data-"+n.id),
			HTTPAddr: peers[i].HTTPAddr, RaftAddr: peers[i].RaftAddr, HTTPSAddr: peers[i].HTTPSAddr, PublicURL: *publicURL,
			ClusterSecret: clusterSecret, Peers: peers, TLS: boxTLS(tlsDir, n.id, !*plainHTTP)}
		c.HTTP.AllowPlainStaff = *plainHTTP
		c.Staff.PasswordHash, c.Staff.TokenSecret, c.Staff.KitchenPasswordHash = hash, tokenSecret, kitchenHash
		if *systemd {
			boxPaths(&c, n.id)
			if err := writeSystemdUnit(dir, n.id, c.HTTPAddr); err != nil {
				return fmt.Errorf("write systemd unit: %w", err)
			}
		}
		b, err := toml.Marshal(c)
		if err != nil {
			return err
		}
		header := "# masterorder node " + n.id + " — written by `masterorder init`; see config.example.toml for every setting.\n"
		if err := os.WriteFile(filepath.Join(dir, n.id+".toml"), append([]byte(header), b...), 0o600); err != nil {
			return fmt.Errorf("write config: %w", err)
		}
		// Validate what we wrote, so init never leaves an unusable config.
		if _, err := orders.LoadConfig(filepath.Join(dir, n.id+".toml")); err != nil {
			return fmt.Errorf("written config for %s does not load: %w", n.id, err)
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
		n := initNode{id: c.NodeID, host: host}
		if err := issueBox(ca, tlsDir, n, c.PublicURL, false); err != nil {
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
	boxBinary  = "/usr/local/bin/masterorder"
	boxEtc     = "/etc/masterorder"
	boxDataDir = "/var/lib/masterorder" // StateDirectory=masterorder
	boxUser    = "masterorder"
)

// boxPaths points a config at the box layout.
func boxPaths(c *initConfig, id string) {
	tls := filepath.Join(boxEtc, "tls")
	c.DataDir = boxDataDir
	c.TLS = boxTLS(tls, id, c.HTTPSAddr != "")
}

// writeSystemdUnit writes DIR/masterorder-<id>.service.
func writeSystemdUnit(dir, id, httpAddr string) error {
	var caps string
	if _, port, err := net.SplitHostPort(httpAddr); err == nil {
		if p, _ := strconv.Atoi(port); p > 0 && p < 1024 {
			caps = "AmbientCapabilities=CAP_NET_BIND_SERVICE\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"
		}
	}
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

[Unit]
Description=MasterOrder store node %[1]s
Wants=network-online.target
After=network-online.target
# The box needs no internet and no correct clock: no time-sync dependency.
StartLimitIntervalSec=0

[Service]
Type=simple
User=%[5]s
Group=%[5]s
ExecStart=%[2]s run --config %[3]s/%[1]s.toml
StateDirectory=masterorder
StateDirectoryMode=0750
WorkingDirectory=%[4]s
# SIGTERM stops the node cleanly; it stays a member of the cluster.
KillSignal=SIGTERM
TimeoutStopSec=30s
Restart=on-failure
RestartSec=2s
# Exit 2 is a bad config: restarting will not fix it.
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
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
%[6]s
[Install]
WantedBy=multi-user.target
`, id, boxBinary, boxEtc, boxDataDir, boxUser, caps)
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
	self := node.Peer{ID: nn.id, HTTPAddr: net.JoinHostPort(nn.host, nn.httpPort), RaftAddr: net.JoinHostPort(nn.host, nn.raftPort)}
	plain := base.HTTPSAddr == "" // the new box serves what the others do
	if !plain {
		self.HTTPSAddr = net.JoinHostPort(nn.host, nn.httpsPort)
	}
	var peers []node.Peer
	for _, p := range base.Peers {
		if p.ID == nn.id {
			return usageError{"--add-node: " + nn.id + " is already in the cluster's configs; pick a new id for a new box"}
		}
		p.DialAddr = ""
		peers = append(peers, p)
	}
	peers = append(peers, self)
	if err := issueBox(ca, tlsDir, nn, base.PublicURL, plain); err != nil {
		return err
	}
	c := initConfig{NodeID: nn.id, ShopID: base.ShopID, DataDir: filepath.Join(dir, "data-"+nn.id), HTTPAddr: self.HTTPAddr,
		RaftAddr: self.RaftAddr, HTTPSAddr: self.HTTPSAddr, PublicURL: base.PublicURL, ClusterSecret: base.ClusterSecret, Join: true, Peers: peers,
		TLS: boxTLS(tlsDir, nn.id, !plain)}
	c.HTTP.AllowPlainStaff = base.HTTP.AllowPlainStaff
	c.Staff.PasswordHash, c.Staff.TokenSecret, c.Staff.KitchenPasswordHash = base.Staff.PasswordHash, base.Staff.TokenSecret, base.Staff.KitchenPasswordHash
	if systemd {
		boxPaths(&c, nn.id)
	}
	b, err := toml.Marshal(c)
	if err != nil {
		return err
	}
	header := "# masterorder node " + nn.id + " — joins the existing cluster (written by `masterorder init --add-node`).\n"
	if err := os.WriteFile(out, append([]byte(header), b...), 0o600); err != nil {
		return err
	}
	if _, err := orders.LoadConfig(out); err != nil {
		return fmt.Errorf("written config for %s does not load: %w", nn.id, err)
	}
	if systemd {
		if err := writeSystemdUnit(dir, nn.id, self.HTTPAddr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s and the certificate for %s in %s\n", out, nn.id, tlsDir)
	fmt.Fprintf(stdout, "start it, then add it from any member:\n  masterorder members add --url http://%s --id %s --raft-addr %s --http-addr %s\n",
		peers[0].HTTPAddr, nn.id, self.RaftAddr, self.HTTPAddr)
	return nil
}
