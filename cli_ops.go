package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/orders"
)

// Operations on a running store: membership, backup, restore; and the
// box-side parts of init (systemd units, a config for a replacement box).

// passwordEnv is read when --password is not given (keeps the password
// out of the process list and shell history).
const passwordEnv = "MASTERORDER_STAFF_PASSWORD"

type opsClient struct {
	base  string
	token string
	http  *http.Client
}

// staffClient logs in to base with the staff password.
func staffClient(ctx context.Context, base, password string) (*opsClient, error) {
	if password == "" {
		password = os.Getenv(passwordEnv)
	}
	if password == "" {
		return nil, usageError{"needs --password or $" + passwordEnv}
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	c := &opsClient{base: base, http: &http.Client{Transport: &http.Transport{Proxy: nil, ResponseHeaderTimeout: 30 * time.Second}}}
	var out struct {
		Token string `json:"token"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/staff/login", map[string]string{"password": password}, &out); err != nil {
		return nil, fmt.Errorf("login at %s: %w", base, err)
	}
	c.token = out.Token
	return c, nil
}

// apiError is a refusal from the server, with its reason code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.msg) }

func (c *opsClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, c.base+path, rd)
	if err != nil {
		return usageError{"--url: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			ReasonCode string `json:"reasonCode"`
			Message    string `json:"message"`
		}
		json.Unmarshal(data, &e)
		if e.ReasonCode == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return &apiError{status: resp.StatusCode, code: e.ReasonCode, msg: e.Message}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

const membersUsage = `usage:
  masterorder members add     --url URL --id ID --raft-addr HOST:PORT --http-addr HOST:PORT [--voter=false] [--password PW]
  masterorder members promote --url URL --id ID [--password PW]
  masterorder members remove  --url URL --id ID [--force] [--password PW]
URL is any member's base URL; the password may come from $` + passwordEnv + `.
`

func cmdMembers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "promote") {
		fmt.Fprint(stderr, membersUsage)
		return usageError{"members needs add, remove or promote"}
	}
	op := args[0]
	fs := flag.NewFlagSet("members "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "any member's base URL, e.g. http://192.168.1.10:8080")
	password := fs.String("password", "", "staff password (default $"+passwordEnv+")")
	id := fs.String("id", "", "the member's node id")
	raftAddr := fs.String("raft-addr", "", "add: the new box's raft_addr")
	httpAddr := fs.String("http-addr", "", "add: the new box's http_addr")
	voter := fs.Bool("voter", true, "add: as a voter (false: a non-voter, to promote once caught up)")
	force := fs.Bool("force", false, "remove: skip the check that the voters left still answer")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" || *id == "" {
		return usageError{"members " + op + " needs --url and --id"}
	}
	if op == "add" && (*raftAddr == "" || *httpAddr == "") {
		return usageError{"members add needs --raft-addr and --http-addr"}
	}
	c, err := staffClient(ctx, *url, *password)
	if err != nil {
		return err
	}
	var out struct {
		Nodes []node.MemberStatus `json:"nodes"`
	}
	switch op {
	case "add":
		err = c.call(ctx, http.MethodPost, "/api/staff/cluster/members",
			map[string]any{"id": *id, "raftAddr": *raftAddr, "httpAddr": *httpAddr, "voter": *voter}, &out)
	case "promote":
		err = c.call(ctx, http.MethodPost, "/api/staff/cluster/members/"+*id+"/promote", nil, &out)
	case "remove":
		path := "/api/staff/cluster/members/" + *id
		if *force {
			path += "?force=true"
		}
		err = c.call(ctx, http.MethodDelete, path, nil, &out)
	}
	if err != nil {
		return fmt.Errorf("members %s %s: %w", op, *id, err)
	}
	fmt.Fprintf(stdout, "%-8s %-22s %-22s %s\n", "ID", "HTTP", "RAFT", "SUFFRAGE")
	for _, m := range out.Nodes {
		fmt.Fprintf(stdout, "%-8s %-22s %-22s %s\n", m.ID, m.HTTPAddr, m.RaftAddr, m.Suffrage)
	}
	return nil
}

func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "any member's base URL")
	out := fs.String("out", "", "backup file to write")
	password := fs.String("password", "", "staff password (default $"+passwordEnv+")")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" || *out == "" {
		return usageError{"backup needs --url and --out"}
	}
	c, err := staffClient(ctx, *url, *password)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/staff/backup", nil)
	if err != nil {
		return usageError{"--url: " + err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept-Language", "en")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("backup from %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("backup from %s: status %d: %s", c.base, resp.StatusCode, bytes.TrimSpace(data))
	}
	tmp := *out + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), resp.Body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup download: %w", err)
	}
	// The digest trailer arrives after the body: without it (or with an
	// error trailer) the stream was cut and the file is not a backup.
	if msg := resp.Trailer.Get(orders.BackupErrorTrailer); msg != "" {
		return fmt.Errorf("backup failed on the server: %s", msg)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if want := resp.Trailer.Get(orders.BackupDigestTrailer); want != digest {
		return fmt.Errorf("backup incomplete: %d bytes, digest %s, server said %q", n, digest, want)
	}
	// Success means the file restores: both stores at the index the
	// server claimed.
	index, err := verifyBackupFile(tmp, stderr)
	if err != nil {
		return fmt.Errorf("backup of %s does not restore: %w", c.base, err)
	}
	if claimed := resp.Header.Get(orders.BackupIndexHeader); claimed != strconv.FormatUint(index, 10) {
		return fmt.Errorf("backup of %s holds index %d, the server claimed %q", c.base, index, claimed)
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup of %s at index %d: %d bytes, sha256 %s, verified: it restores\n", c.base, index, n, digest)
	fmt.Fprintf(stdout, "written to %s\n", *out)
	return nil
}

func verifyBackupFile(path string, stderr io.Writer) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, stderr)
	return node.VerifyBackup(opts, filepath.Dir(path), f)
}

func cmdRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "backup file (masterorder backup --out)")
	path := fs.String("config", "", "the config of the node to seed (its data_dir must be fresh)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *in == "" || *path == "" {
		return usageError{"restore needs --in and --config"}
	}
	cfg, err := node.LoadConfig(*path)
	if err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return usageError{"--in: " + err.Error()}
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, stderr)
	info, err := node.RestoreBackup(cfg, opts, f)
	if err != nil {
		return fmt.Errorf("restore into %s: %w", cfg.DataDir, err)
	}
	fmt.Fprintf(stdout, "restored %d bytes at index %d into %s; members %s\n", info.Bytes, info.Index, cfg.DataDir, strings.Join(info.Members, ", "))
	fmt.Fprintf(stdout, "start it with: masterorder run --config %s\n", *path)
	return nil
}

// ---- init: box layout and systemd units ----

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
# Install on box %[1]s (see README, "A three-Pi store, start to finish"):
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
	var base node.Config
	found := false
	for _, p := range existing {
		if filepath.Base(p) == nn.id+".toml" {
			continue
		}
		if c, err := node.LoadConfig(p); err == nil {
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
	if _, err := node.LoadConfig(out); err != nil {
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
