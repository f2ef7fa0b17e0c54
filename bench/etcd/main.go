// Command etcdbench is the yardstick of `masterorder bench --closed-loop`:
// three etcd members on loopback (Debian's etcd-server, peers over mutual
// TLS like MasterOrder's Raft), and a closed loop of clientv3 callers each
// doing the single conditional put a coordination store offers
// (Txn(If(CreateRevision(key) == 0)).Then(Put(key, value, lease))) with a
// fresh key, spread over the members (--leader-only: all through the
// leader's client, as MasterOrder's --leader-only sends every order to its
// leader), warm-up excluded. It reports the same
// figures as the MasterOrder closed loop: puts/s, p50/p95/p99, failures by
// kind, and per member CPU microseconds and bytes written per put, peak RSS
// and RSS at the end (/proc/PID), with the per put figures summed over the
// three members; --json writes the same as JSON (bench/pairs.sh reads it).
//
// A measuring tool only, in a module of its own so that the etcd client
// stays out of the masterorder binary; no other test needs it (its own
// test covers the choice of the leader).
//
//	apt-get install -y etcd-server
//	cd bench/etcd && go run . --concurrency 64 --duration 30s
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	etcdBin := flag.String("etcd", "/usr/bin/etcd", "etcd server binary (Debian: apt-get install etcd-server)")
	conc := flag.Int("concurrency", 16, "closed-loop callers")
	dur := flag.Duration("duration", 30*time.Second, "measured window")
	warmup := flag.Duration("warmup", 5*time.Second, "puts answered in this first stretch are not counted")
	dataDir := flag.String("data-dir", "", "members' data (default a temporary directory, removed afterwards)")
	peerTLS := flag.Bool("peer-tls", true, "members talk over mutual TLS (as MasterOrder's Raft does)")
	jsonPath := flag.String("json", "", "also write the report as JSON to this file")
	leaderOnly := flag.Bool("leader-only", false, "every caller puts through the client of the member that is leader (found with Status, followed when it changes), as `masterorder bench --closed-loop --leader-only` addresses the Raft leader; default: callers round the members' clients")
	cpuProfile := flag.String("cpuprofile", "", "write each member's CPU profile of the measured window (etcd --enable-pprof) and this process's own (callers.pprof) into this directory, as `masterorder bench --closed-loop --cpuprofile` does for its nodes")
	flag.Parse()
	if err := run(*etcdBin, *conc, *dur, *warmup, *dataDir, *peerTLS, *leaderOnly, *jsonPath, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
}

type member struct {
	name, client, peer string
	cmd                *exec.Cmd
	done               chan struct{}
}

// report is what one run measured; its JSON names match `masterorder
// bench --closed-loop --json` where the figure is the same (per put for
// per order). Addressing is "leader" (--leader-only: every put through
// the leader's client) or "spread" (callers round the members' clients);
// Leaders is, with "leader", every member puts went to, in turn.
type report struct {
	Etcd            string         `json:"etcd"`
	PeerTLS         bool           `json:"peerTls"`
	Addressing      string         `json:"addressing"`
	Leaders         []string       `json:"leaders,omitempty"`
	Concurrency     int            `json:"concurrency"`
	WarmupSeconds   float64        `json:"warmupSeconds"`
	MeasuredSeconds float64        `json:"measuredSeconds"`
	Puts            int64          `json:"puts"`
	PutsPerSecond   float64        `json:"putsPerSecond"`
	LatencyMs       latency        `json:"latencyMs"`
	Failures        map[string]int `json:"failures"`
	Members         []memberUsage  `json:"members"`
	// Cluster is the per put figures summed over the members.
	Cluster struct {
		CPUMicrosPerPut    float64 `json:"cpuMicrosPerPut"`
		WrittenBytesPerPut float64 `json:"writtenBytesPerPut"`
	} `json:"cluster"`
	// Callers is this process's own CPU per put over the window (the
	// clients' gRPC), as masterorder bench --closed-loop reports its
	// callers'; -1 unknown.
	Callers struct {
		CPUMicrosPerPut float64 `json:"cpuMicrosPerPut"`
	} `json:"callers"`
}

type latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type memberUsage struct {
	Name               string  `json:"name"`
	PID                int     `json:"pid"`
	PeakRSSBytes       int64   `json:"peakRssBytes"`
	RSSBytes           int64   `json:"rssBytes"`
	WrittenBytes       int64   `json:"writtenBytes"`
	WrittenBytesPerPut float64 `json:"writtenBytesPerPut"`
	CPUSeconds         float64 `json:"cpuSeconds"`
	CPUMicrosPerPut    float64 `json:"cpuMicrosPerPut"`
}

func run(bin string, conc int, dur, warmup time.Duration, dir string, peerTLS, leaderOnly bool, jsonPath, profileDir string) error {
	if conc < 1 || dur <= 0 {
		return errors.New("--concurrency ≥ 1 and --duration > 0")
	}
	keep := dir != ""
	if dir == "" {
		d, err := os.MkdirTemp("", "etcdbench-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	scheme := "http"
	var tlsArgs []string
	if peerTLS {
		scheme = "https"
		if tlsArgs, err = writePeerPKI(dir); err != nil {
			return err
		}
	}
	ms := make([]*member, 3)
	var cluster []string
	for i := range ms {
		ms[i] = &member{name: fmt.Sprintf("m%d", i+1),
			client: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			peer:   fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i+1]), done: make(chan struct{})}
		cluster = append(cluster, ms[i].name+"="+ms[i].peer)
	}
	for _, m := range ms {
		args := []string{"--name", m.name, "--data-dir", filepath.Join(dir, m.name),
			"--listen-client-urls", m.client, "--advertise-client-urls", m.client,
			"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdbench", "--log-level", "warn", "--logger", "zap"}
		args = append(args, tlsArgs...)
		if profileDir != "" {
			args = append(args, "--enable-pprof")
		}
		m.cmd = exec.Command(bin, args...)
		lf, err := os.Create(filepath.Join(dir, m.name+".log"))
		if err != nil {
			return err
		}
		defer lf.Close()
		m.cmd.Stdout, m.cmd.Stderr = lf, lf
		m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := m.cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", m.name, err)
		}
		go func() { m.cmd.Wait(); close(m.done) }()
		defer stop(m)
	}

	eps := make([]string, len(ms))
	for i, m := range ms {
		eps[i] = m.client
	}
	// One client (one gRPC connection) per member; callers go round them,
	// as the MasterOrder closed loop spreads orders over the nodes.
	clients := make([]*clientv3.Client, len(ms))
	for i := range ms {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[i]}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer c.Close()
		clients[i] = c
	}
	ctx := context.Background()
	var lease clientv3.LeaseID
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		l, err := clients[0].Grant(cctx, 3600)
		cancel()
		if err == nil {
			lease = l.ID
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var lt *leaderTracker
	stopWatching := func() {}
	if leaderOnly {
		names := make([]string, len(ms))
		for i, m := range ms {
			names[i] = m.name
		}
		lt = &leaderTracker{names: names, status: func(ctx context.Context, i int) memberStatus {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			r, err := clients[i].Status(ctx, eps[i])
			if err != nil {
				return memberStatus{err: err}
			}
			return memberStatus{id: r.Header.MemberId, leader: r.Leader, term: r.RaftTerm}
		}}
		if _, err := lt.resolve(ctx, 0, 30*time.Second); err != nil {
			return err
		}
	}

	var measuring atomic.Bool
	var mu sync.Mutex
	var lat []float64
	failures := map[string]int{}
	var n atomic.Int64
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	prefix := "/bench/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	var seq atomic.Int64
	value := bytes.Repeat([]byte("x"), 256) // about a whole order's size on the wire
	if lt != nil {
		stopWatching = lt.watch(runCtx, time.Second)
	}
	for i := range conc {
		wg.Go(func() {
			c := clients[i%len(clients)]
			var seen uint64 // the leader search c came from
			for runCtx.Err() == nil {
				if lt != nil {
					var l int
					l, seen = lt.current()
					c = clients[l]
				}
				key := prefix + strconv.FormatInt(seq.Add(1), 10)
				t0 := time.Now()
				rctx, rcancel := context.WithTimeout(runCtx, 10*time.Second)
				resp, err := c.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, string(value), clientv3.WithLease(lease))).Commit()
				rcancel()
				el := time.Since(t0)
				if err != nil && lt != nil && runCtx.Err() == nil {
					// A refusal may mean the leader changed: ask again.
					_, _ = lt.resolve(runCtx, seen, 3*time.Second)
				}
				if !measuring.Load() {
					continue
				}
				switch {
				case err != nil && runCtx.Err() != nil:
				case err != nil:
					mu.Lock()
					failures[errKind(err)]++
					mu.Unlock()
				case !resp.Succeeded:
					mu.Lock()
					failures["KEY_EXISTS"]++
					mu.Unlock()
				default:
					n.Add(1)
					mu.Lock()
					lat = append(lat, float64(el)/float64(time.Millisecond))
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(warmup)
	before := make([]int64, len(ms))
	cpuBefore := make([]time.Duration, len(ms))
	for i, m := range ms {
		before[i], _ = procIO(m.cmd.Process.Pid)
		cpuBefore[i], _ = procCPU(m.cmd.Process.Pid)
	}
	selfBefore, selfErrBefore := procCPU(os.Getpid())
	start := time.Now()
	measuring.Store(true)
	var profiles []string
	if profileDir != "" {
		profiles = profileWindow(ctx, profileDir, ms, dur)
	} else {
		time.Sleep(dur)
	}
	measuring.Store(false)
	el := time.Since(start)
	selfAfter, selfErrAfter := procCPU(os.Getpid())
	after := make([]int64, len(ms))
	cpuAfter := make([]time.Duration, len(ms))
	for i, m := range ms {
		after[i], _ = procIO(m.cmd.Process.Pid)
		cpuAfter[i], _ = procCPU(m.cmd.Process.Pid)
	}
	cancel()
	wg.Wait()
	stopWatching()

	puts := n.Load()
	mu.Lock()
	defer mu.Unlock()
	p := percentiles(lat)
	rep := report{Etcd: etcdVersion(bin), PeerTLS: peerTLS, Concurrency: conc, WarmupSeconds: warmup.Seconds(),
		MeasuredSeconds: round(el.Seconds(), 2), Puts: puts, PutsPerSecond: round(float64(puts)/el.Seconds(), 1),
		LatencyMs: latency{round(p[0], 1), round(p[1], 1), round(p[2], 1), round(p[3], 1)}, Failures: failures,
		Addressing: "spread"}
	if lt != nil {
		rep.Addressing, rep.Leaders = "leader", lt.leaders()
	}
	for i, m := range ms {
		pid := m.cmd.Process.Pid
		u := memberUsage{Name: m.name, PID: pid, WrittenBytes: after[i] - before[i], CPUSeconds: round((cpuAfter[i] - cpuBefore[i]).Seconds(), 2)}
		u.PeakRSSBytes, _ = procStatus(pid, "VmHWM")
		u.RSSBytes, _ = procStatus(pid, "VmRSS")
		if puts > 0 {
			u.WrittenBytesPerPut = round(float64(u.WrittenBytes)/float64(puts), 0)
			u.CPUMicrosPerPut = round(float64(cpuAfter[i]-cpuBefore[i])/float64(time.Microsecond)/float64(puts), 1)
		}
		rep.Cluster.CPUMicrosPerPut += u.CPUMicrosPerPut
		rep.Cluster.WrittenBytesPerPut += u.WrittenBytesPerPut
		rep.Members = append(rep.Members, u)
	}
	rep.Cluster.CPUMicrosPerPut = round(rep.Cluster.CPUMicrosPerPut, 1)
	rep.Callers.CPUMicrosPerPut = -1
	if selfErrBefore == nil && selfErrAfter == nil && puts > 0 {
		rep.Callers.CPUMicrosPerPut = round(float64(selfAfter-selfBefore)/float64(time.Microsecond)/float64(puts), 1)
	}
	fmt.Printf("etcd closed loop: 3 members (etcd %s, peers over %s), %d callers, warm-up %s excluded, measured %.1fs\n",
		rep.Etcd, map[bool]string{true: "mutual TLS", false: "plain HTTP"}[peerTLS], conc, warmup, el.Seconds())
	fmt.Printf("  addressing    %s\n", addressingText(rep.Addressing, rep.Leaders, len(ms)))
	fmt.Printf("  conditional puts %d (%.1f/s)\n", puts, rep.PutsPerSecond)
	fmt.Printf("  latency ms    p50 %.1f  p95 %.1f  p99 %.1f  max %.1f\n", p[0], p[1], p[2], p[3])
	fmt.Printf("  failures      %v\n", failures)
	for _, u := range rep.Members {
		fmt.Printf("  member %s  cpu %.0f µs/put  written %.1f MiB, %.0f B/put  RSS %.1f MiB at the end, peak %.1f MiB\n",
			u.Name, u.CPUMicrosPerPut, float64(u.WrittenBytes)/(1<<20), u.WrittenBytesPerPut, float64(u.RSSBytes)/(1<<20), float64(u.PeakRSSBytes)/(1<<20))
	}
	fmt.Printf("  cluster       cpu %.0f µs/put  written %.0f B/put  (the %d members summed)\n", rep.Cluster.CPUMicrosPerPut, rep.Cluster.WrittenBytesPerPut, len(rep.Members))
	if rep.Callers.CPUMicrosPerPut >= 0 {
		fmt.Printf("  callers       cpu %.0f µs/put  (this process: the clients' gRPC)\n", rep.Callers.CPUMicrosPerPut)
	}
	for _, f := range profiles {
		fmt.Printf("  cpu profile   %s\n", f)
	}
	if jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	return nil
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func errKind(err error) string {
	s := err.Error()
	if i := strings.Index(s, "desc = "); i >= 0 {
		s = s[i+7:]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

func stop(m *member) {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	}
}

func etcdVersion(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "etcd Version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func percentiles(ms []float64) [4]float64 {
	if len(ms) == 0 {
		return [4]float64{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return [4]float64{at(50), at(95), at(99), s[len(s)-1]}
}

func procIO(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no write_bytes")
}

// procCPU is user + system time from /proc/PID/stat (USER_HZ = 100).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, errors.New("malformed stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// procStatus reads a "Key: N kB" line of /proc/PID/status in bytes.
func procStatus(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n * 1024, err
			}
		}
	}
	return 0, errors.New("no " + key)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writePeerPKI writes a CA and one certificate for 127.0.0.1 that every
// member uses as server and client, and returns etcd's peer TLS flags.
func writePeerPKI(dir string) ([]string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdbench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "etcdbench peer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.pem":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"peer.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"peer.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{"--peer-client-cert-auth", "--peer-trusted-ca-file", filepath.Join(dir, "ca.pem"),
		"--peer-cert-file", filepath.Join(dir, "peer.pem"), "--peer-key-file", filepath.Join(dir, "peer.key")}, nil
}
