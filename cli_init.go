package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/node/staffauth"
)

type initNode struct {
	id, host, httpPort, raftPort string
}

func parseInitNodes(spec string) ([]initNode, error) {
	var out []initNode
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		fields := strings.Split(addr, ":")
		if !ok || len(fields) != 3 {
			return nil, usageError{fmt.Sprintf("--nodes: %q is not ID=HOST:HTTPPORT:RAFTPORT", part)}
		}
		if err := pki.ValidateNodeID(id); err != nil || seen[id] {
			return nil, usageError{fmt.Sprintf("--nodes: bad or repeated node id %q", id)}
		}
		seen[id] = true
		out = append(out, initNode{id: id, host: fields[0], httpPort: fields[1], raftPort: fields[2]})
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
	Peers         []node.Peer `toml:"peers"`
	Staff         struct {
		PasswordHash string `toml:"password_hash"`
		TokenSecret  string `toml:"token_secret"`
	} `toml:"staff"`
	TLS node.TLSConfig `toml:"tls"`
}

func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shop := fs.String("shop-id", "", "shop id ([A-Za-z0-9_-])")
	nodesSpec := fs.String("nodes", "", "a=HOST:HTTPPORT:RAFTPORT,b=…")
	out := fs.String("out", "", "output directory")
	password := fs.String("staff-password", "", "staff password (random if empty)")
	force := fs.Bool("force", false, "overwrite existing configs")
	systemd := fs.Bool("systemd", false, "write configs for the box layout ("+boxEtc+", "+boxDataDir+") and a systemd unit per node")
	addNode := fs.String("add-node", "", "ID=HOST:HTTPPORT:RAFTPORT: a config and certificate for a box joining the cluster in --out")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
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
	pw := *password
	printed := false
	if pw == "" {
		pw = staffauth.NewSecret()[:16]
		printed = true
	}
	hash, err := staffauth.HashPassword(pw)
	if err != nil {
		return usageError{"--staff-password: " + err.Error()}
	}
	ca, err := pki.NewCA("MasterOrder "+*shop, 0)
	if err != nil {
		return fmt.Errorf("create cluster CA: %w", err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := ca.WriteFiles(tlsDir); err != nil {
		return fmt.Errorf("write cluster CA: %w", err)
	}
	var peers []node.Peer
	for _, n := range nodes {
		peers = append(peers, node.Peer{ID: n.id, HTTPAddr: net.JoinHostPort(n.host, n.httpPort), RaftAddr: net.JoinHostPort(n.host, n.raftPort)})
	}
	clusterSecret, tokenSecret := staffauth.NewSecret(), staffauth.NewSecret()
	for i, n := range nodes {
		cert, key, err := ca.IssueNode(n.id, []string{n.host}, 0)
		if err != nil {
			return fmt.Errorf("issue certificate for %s: %w", n.id, err)
		}
		if err := pki.WriteNodeFiles(tlsDir, n.id, cert, key); err != nil {
			return fmt.Errorf("write certificate for %s: %w", n.id, err)
		}
		c := initConfig{NodeID: n.id, ShopID: *shop, DataDir: filepath.Join(dir, "data-"+n.id),
			HTTPAddr: peers[i].HTTPAddr, RaftAddr: peers[i].RaftAddr, ClusterSecret: clusterSecret, Peers: peers,
			TLS: node.TLSConfig{CAFile: pki.CAFile(tlsDir), CertFile: pki.NodeCertFile(tlsDir, n.id), KeyFile: pki.NodeKeyFile(tlsDir, n.id)}}
		c.Staff.PasswordHash, c.Staff.TokenSecret = hash, tokenSecret
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
		if _, err := node.LoadConfig(filepath.Join(dir, n.id+".toml")); err != nil {
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
	if printed {
		fmt.Fprintf(stdout, "staff password: %s\n", pw)
	}
	return nil
}
