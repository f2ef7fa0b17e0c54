package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// localCluster is three `masterorder run` processes the closed loop
// started itself from `masterorder init` files: the way a store runs
// (Raft between them over mutual TLS), on loopback.
type localCluster struct {
	dir      string
	keepDir  bool
	password string
	nodes    []*localNode
}

type localNode struct {
	id      string
	httpURL string
	cmd     *exec.Cmd
	done    chan struct{}
	log     *os.File
}

func (lc *localCluster) urls() []string {
	u := make([]string, len(lc.nodes))
	for i, n := range lc.nodes {
		u[i] = n.httpURL
	}
	return u
}

// pidOf is the process id serving base ("" and false for other URLs).
func (lc *localCluster) pidOf(base string) (int, bool) {
	if lc == nil {
		return 0, false
	}
	for _, n := range lc.nodes {
		if n.httpURL == base {
			return n.cmd.Process.Pid, true
		}
	}
	return 0, false
}

// startLocalCluster writes a three-node cluster with `init` into
// cfg.DataDir (a new temporary directory when empty, removed by stop),
// starts the nodes and waits until each is ready.
func startLocalCluster(ctx context.Context, cfg Config) (*localCluster, error) {
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	lc := &localCluster{dir: cfg.DataDir, keepDir: cfg.DataDir != "", password: "bench-" + randomID(16)}
	if lc.dir == "" {
		d, err := os.MkdirTemp("", "masterorder-bench-")
		if err != nil {
			return nil, err
		}
		lc.dir = d
	} else if err := os.MkdirAll(lc.dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freeLoopbackPorts(6)
	if err != nil {
		lc.stop()
		return nil, err
	}
	ids := []string{"a", "b", "c"}
	spec := make([]string, len(ids))
	for i, id := range ids {
		spec[i] = fmt.Sprintf("%s=127.0.0.1:%d:%d", id, ports[2*i], ports[2*i+1])
	}
	// --plain-http only drops the guest HTTPS listener (the load comes over
	// plain HTTP, as on the store LAN); Raft and forwarding stay on mutual
	// TLS.
	out, err := exec.CommandContext(ctx, bin, "init", "--shop-id", "bench", "--nodes", strings.Join(spec, ","),
		"--out", lc.dir, "--staff-password", lc.password, "--kitchen-password", "k-"+lc.password, "--plain-http", "--force").CombinedOutput()
	if err != nil {
		lc.stop()
		return nil, fmt.Errorf("masterorder init: %v: %s", err, strings.TrimSpace(string(out)))
	}
	for i, id := range ids {
		n := &localNode{id: id, httpURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), done: make(chan struct{})}
		lf, err := os.OpenFile(filepath.Join(lc.dir, id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			lc.stop()
			return nil, err
		}
		n.log = lf
		n.cmd = exec.Command(bin, "run", "--config", filepath.Join(lc.dir, id+".toml"))
		n.cmd.Stdout, n.cmd.Stderr = lf, lf
		// Taken down with the bench if it dies without stopping them.
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := n.cmd.Start(); err != nil {
			lf.Close()
			lc.stop()
			return nil, fmt.Errorf("starting node %s: %w", id, err)
		}
		go func() { n.cmd.Wait(); close(n.done) }()
		lc.nodes = append(lc.nodes, n)
	}
	if err := lc.waitReady(ctx, 90*time.Second); err != nil {
		lc.stop()
		return nil, err
	}
	return lc, nil
}

// waitReady polls /readyz on every node.
func (lc *localCluster) waitReady(ctx context.Context, timeout time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for _, n := range lc.nodes {
		for {
			select {
			case <-n.done:
				return fmt.Errorf("node %s exited during start (log in %s)", n.id, n.log.Name())
			default:
			}
			if resp, err := c.Get(n.httpURL + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s not ready within %s (log in %s)", n.id, timeout, n.log.Name())
			}
			if !sleep(ctx, 100*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// stop sends SIGTERM to every node, SIGKILL to the process group of any
// still running after 20 s, and removes the directory unless it was given.
func (lc *localCluster) stop() {
	for _, n := range lc.nodes {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, n := range lc.nodes {
		select {
		case <-n.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.done
		}
		n.log.Close()
	}
	if !lc.keepDir {
		os.RemoveAll(lc.dir)
	}
}

// freeLoopbackPorts returns n distinct loopback ports that were free a
// moment ago.
func freeLoopbackPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
