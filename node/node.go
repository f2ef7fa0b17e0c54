package node

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/labstack/echo/v4"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/net/http2"

	"masterorder/kv"
	"masterorder/node/atomicfile"
	"masterorder/node/certrenew"
	"masterorder/node/lanname"
	"masterorder/node/peerfind"
	"masterorder/node/pki"
	"masterorder/node/restart"
	"masterorder/node/tlsnet"
	"masterorder/node/wallclock"
	"masterorder/raftfsm"
)

// The FSM files are committed when a group of batches is this old or this
// large (raftfsm.Grouping). 50 ms is what a kitchen screen may lag behind
// an order under load; a reader that needs the order commits it at once.
const (
	fsmGroupDelay   = 50 * time.Millisecond
	fsmGroupEntries = 2048
)

// Options are the parts of a node that are not configuration: what the
// domain registers, and test hooks.
type Options struct {
	// Register adds the domain's commands to the node's dispatch table.
	Register func(reg *raftfsm.Registry)
	Migrate  func(tx *sql.Tx) error
	Logger   *slog.Logger
	// WallClock is the box's wall clock (tests skew it); FSM time never
	// depends on it.
	WallClock func() time.Time
	// ClockSetter steps the box's wall clock forward (clock.go); nil: the
	// box never sets it (tests with a skewed WallClock pass a
	// wallclock.Fake). The binary passes wallclock.System.
	ClockSetter wallclock.Setter
	// ClockSynced reports whether NTP disciplines the clock; nil:
	// wallclock.KernelSynced (adjtimex).
	ClockSynced func() bool
	// BootID is the system's boot id for the clock ("" reads it): tests
	// give a box a new one to play a power cut.
	BootID string
	// ServerTLS/ClientTLS secure the Raft port (Raft and the internal
	// channel) with mutual TLS; nil means load them from the config's [tls].
	ServerTLS *tls.Config
	ClientTLS *tls.Config
	// PeerIdleTimeout closes unused connections to the other boxes
	// (default 90 s; tests shorten it to reach the cold path quickly).
	PeerIdleTimeout time.Duration
	// WriteTimeout bounds writing one API response (default
	// DefaultWriteTimeout; tests shorten it).
	WriteTimeout time.Duration
	// CertCheckEvery is how often the HTTPS certificate is checked for
	// renewal (default certrenew.CheckEvery; tests shorten it).
	CertCheckEvery time.Duration
	// FailBarrier, when set, runs before each post-election Barrier; an
	// error counts as a failed barrier (tests inject failures with it).
	FailBarrier func() error
	// UpdatePending tells whether this box runs an update in its trial
	// boot, not yet committed (it may still fall back to its old build).
	// While any member says so, the leader does not raise the cluster's
	// feature level (featurelevel.go). It is called often (every status,
	// every report to the others, each second on the leader): it must be
	// cheap and must not block. Nil: never.
	UpdatePending func() bool
	// FindPeers asks the LAN where the members are (default: mDNS,
	// node/peerfind); tests give their own.
	FindPeers func(ctx context.Context) (map[string]peerfind.Member, error)
}

// Node is one store box.
type Node struct {
	cfg  Config
	opts Options
	log  *slog.Logger

	fsm           *raftfsm.FSM
	raft          *raft.Raft
	logStore      *raftboltdb.BoltStore
	trans         *raft.NetworkTransport
	closeRaftPort func()
	started       time.Time
	// leaderSeen: when this box last was the leader (a commit, or a
	// leadership change it was told of), in Unix nanoseconds; Raft's
	// LastContact only counts a leader's messages to a follower.
	leaderSeen atomic.Int64
	internal   *http.Server
	peerHTTP   atomic.Pointer[http.Client] // renewed when a member's address changes (renewPeerClients)
	fwd        forwardBatcher              // forwards to the leader, batched (forwardbatch.go)
	csp        atomic.Pointer[builtCSP]    // the security headers' policy, reused for a second (http.go)
	// diskHTTP is the card watch's own pool: it asks every peer every 2 s,
	// and on peerHTTP it would keep the forwards' connections open, so a
	// write right after a leader died would go out on a dead connection
	// (outcome unknown) instead of a refused dial (safe to retry).
	diskHTTP     atomic.Pointer[http.Client]
	echo         *echo.Echo
	httpLn       net.Listener
	https        *http.Server                      // nil without https_addr
	certs        atomic.Pointer[certrenew.Renewer] // the HTTPS pair and its renewal (certs.go); nil without https_addr
	kv           kv.Client
	clock        leaderClock
	wall         *wallclock.Keeper // this box's wall clock, forward only (clock.go)
	startIndex   uint64            // the last log index at start: entries up to it are replays
	managerClock atomic.Uint64     // the log index of the last manager's time this box handled (ClockFromManager)
	ready        atomic.Bool       // leader: barrier done and clock set
	steppingDown atomic.Bool       // a halted leader is handing over (stepDownIfHalted)
	degraded     atomic.Bool       // the last ReadLocal found no quorum
	workersMu    sync.Mutex
	workers      []worker
	probe        peerProbe
	book         *peerBook                 // where each member is now (peeraddr.go)
	guestName    *lanname.Answerer         // nil without mdns_name
	staffRoutes  []func(*echo.Group)       // AddStaffRoutes
	serials      peerSerials               // certificate serials seen per member (peercheck.go)
	raftRef      atomic.Pointer[raft.Raft] // n.raft for the TLS handshake goroutines
	metrics      *nodeMetrics
	leaderRounds readRounds // ReadIndex rounds shared by concurrent reads (readindex.go)
	remoteRounds readRounds

	// internalRoutes are the extra routes of the internal channel
	// (AddInternalRoute).
	internalRoutes map[string]http.Handler

	disk   diskWatch  // this box's card (disk.go)
	fatal  chan error // the box cannot go on in place (Fatal)
	failed atomic.Pointer[error]

	raftLogs    peerLogThrottle // Raft's lines about one peer (raftlog.go)
	lastRestart *restart.Record // why this run started (lastrestart.go)
	run         restart.Run

	extrasMu sync.Mutex
	// backupMu: one console backup at a time (http_backups.go).
	backupMu   sync.Mutex
	statusFns  []func(*Status)
	staffCheck func(r *http.Request) bool
	origins    []string // CORS origins the domain added (AllowOrigin)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New opens the node's files; routes and workers are added before Start.
func New(cfg Config, opts Options) (*Node, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WallClock == nil {
		opts.WallClock = time.Now
	}
	log := opts.Logger.With("node", cfg.NodeID)
	if opts.ServerTLS == nil || opts.ClientTLS == nil {
		// No plaintext Raft port: it would take commands from any phone.
		if !cfg.TLS.Enabled() {
			return nil, &ConfigError{Setting: "tls", Problem: "is required: the cluster port runs mutual TLS only"}
		}
		srv, cli, err := pki.LoadMutualTLS(cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return nil, &ConfigError{Setting: "tls", Problem: err.Error()}
		}
		opts.ServerTLS, opts.ClientTLS = srv, cli
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	if opts.Register != nil {
		opts.Register(reg)
	}
	fsm, err := raftfsm.Open(raftfsm.Options{
		Dir:      filepath.Join(cfg.DataDir, "fsm"),
		Registry: reg,
		Migrate:  opts.Migrate,
		Logger:   log,
		// One commit of the FSM files for up to fsmGroupDelay of batches:
		// a commit costs the same for one order as for hundreds. Readers
		// never wait for it (WaitApplied commits what they need).
		Grouping: raftfsm.Grouping{Delay: fsmGroupDelay, Entries: fsmGroupEntries},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, opts: opts, log: log, fsm: fsm, ctx: ctx, cancel: cancel, fatal: make(chan error, 1)}
	n.disk.wake = make(chan struct{}, 1)
	if err := n.openClock(); err != nil {
		fsm.Close()
		cancel()
		return nil, err
	}
	fsm.SetPauseListener(n.onFSMPause)
	fsm.SetCaptureGate(n.captureGate)
	n.kv = kv.Client{P: kvProposer{n}, V: n}
	// Both ends of every cluster connection check the peer's node id
	// against the membership and the deny-list (peercheck.go).
	n.opts.ServerTLS, n.opts.ClientTLS = n.withPeerCheck(n.opts.ServerTLS), n.withPeerCheck(n.opts.ClientTLS)
	n.AddLeaderWorker("expire", n.expireWorker)
	n.AddLeaderWorker("featureLevel", n.featureLevelWorker)
	n.echo = newEcho(n)
	n.initMetrics()
	n.book = newPeerBook(n.peerBrowser())
	n.book.onFound = func(id string, old, now net.IP) {
		n.log.Info("found a member at a new address", "member", id, "was", old, "now", now)
		if old != nil {
			n.renewPeerClients()
		}
	}
	n.renewPeerClients()
	return n, nil
}

// Config returns the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// Logger returns the node's logger.
func (n *Node) Logger() *slog.Logger { return n.log }

// Echo is the public HTTP server; the domain registers its routes on it.
func (n *Node) Echo() *echo.Echo { return n.echo }

// FSM is the local replica.
func (n *Node) FSM() *raftfsm.FSM { return n.fsm }

// KV is the coordination KV client.
func (n *Node) KV() kv.Client { return n.kv }

// Raft exposes the consensus module (membership, stats).
func (n *Node) Raft() *raft.Raft { return n.raft }

// View reads the local coordination KV.
func (n *Node) View(fn func(tx *bolt.Tx) error) error { return n.fsm.View(fn) }

// Start opens the ports, starts Raft (bootstrapping a new cluster from the
// configured peers) and serves HTTP.
func (n *Node) Start() error { return n.StartContext(context.Background()) }

// StartContext is Start; ctx ends the wait for a peer's snapshot when the
// box has none usable (rebuild.go), e.g. on SIGTERM.
func (n *Node) StartContext(ctx context.Context) error {
	n.started = time.Now()
	n.beginRun()
	n.refreshDisk(n.started)
	if err := n.startRaft(ctx); err != nil {
		n.Stop()
		return err
	}
	ln, err := net.Listen("tcp", bindAddr(n.cfg.HTTPAddr))
	if err != nil {
		n.Stop()
		return fmt.Errorf("listen http_addr %s: %w", n.cfg.HTTPAddr, err)
	}
	ln = limitConns(ln, MaxConnsPerAddr)
	n.httpLn = ln
	if err := n.startHTTPS(); err != nil {
		ln.Close()
		n.httpLn = nil
		n.Stop()
		return err
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		srv := n.echo.Server
		srv.ReadHeaderTimeout = 10 * time.Second
		// Idle keep-alive connections would otherwise never be reaped
		// (no ReadTimeout): a phone could hold them by the thousand.
		srv.IdleTimeout = 2 * time.Minute
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server stopped", "error", err)
		}
	}()
	n.wg.Add(4)
	go func() {
		defer n.wg.Done()
		n.book.run(n.ctx, peerLookupGap)
	}()
	go n.watchLeadership()
	go n.probe.run(n)
	if err := n.startGuestName(); err != nil {
		// Guests still reach every box by its address; the log says why
		// the name is not answered.
		n.log.Error("cannot answer the store's name on the LAN", "name", n.cfg.MDNSName, "error", err)
	}
	go n.watchDisk()
	n.wg.Add(1)
	go n.watchClock()
	return nil
}

// startRaft opens the Raft stores, listens on the raft port, and starts
// Raft on this node's configuration, bootstrapping a new cluster if the
// box holds no state yet.
func (n *Node) startRaft(ctx context.Context) error {
	raftDir := filepath.Join(n.cfg.DataDir, "raft")
	store, snaps, err := n.openRaftStores(raftDir)
	if err != nil {
		return err
	}
	internalLn, err := n.listenRaftPort()
	if err != nil {
		return err
	}
	rc := n.raftConfig()

	// The FSM files persist across restarts. When they are consistent and
	// not behind the newest snapshot, Raft skips the restore and replays
	// only the entries after it (which the FSM skips up to its applied
	// index): a restart costs milliseconds, not a full rebuild.
	restore, err := n.needRestore(snaps, store)
	if err != nil {
		return err
	}
	// No usable snapshot and a compacted log: fetch one from a peer.
	wait, cancel := context.WithCancel(ctx)
	stopWait := context.AfterFunc(n.ctx, cancel)
	restore, err = n.rebuildIfNoSnapshot(wait, raftDir, snaps, store, restore)
	stopWait()
	cancel()
	if err != nil {
		return err
	}
	rc.NoSnapshotRestoreOnStart = !restore

	// A paused FSM catches up from the log and the newest snapshot.
	n.fsm.SetSource(fsmSource{logs: store, snaps: snaps})
	logs := raft.LogStore(countedLogStore{LogStore: store, writes: n.metrics.logWrites, took: n.metrics.logWriteTime, noted: n.noteLogWrite})
	if cache, err := raft.NewLogCache(1024, logs); err == nil {
		logs = cache
	}
	stable := voteGuard{StableStore: store, refuse: n.voteRefusal}
	r, err := raft.NewRaft(rc, meteredFSM{f: n.fsm, m: n.metrics}, logs, stable, snaps, unpipelined{n.trans})
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.raftRef.Store(r)
	// Serve the internal channel only now: its handlers use n.raft (a
	// peer's read-index call can arrive the moment the port is open).
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.internal.Serve(internalLn)
	}()
	return n.bootstrap(logs, store, snaps)
}

// raftLogPageSize is the page size of a Raft log created by this build (a
// log keeps the size it was created with). Every Raft batch is a bbolt
// commit that rewrites the log's last leaf and its branches: with 1 KiB
// pages those rewrites dirty fewer of the kernel's 4 KiB pages. In the
// closed loop at 64 callers (docs/performance.md) the log's dirtied pages
// per order went 5.0 -> 4.3 KB on the leader and 2.9 -> 2.1 KB on a
// follower; 2 KiB and 512 B pages saved less.
const raftLogPageSize = 1024

// raftLogOptions are the bbolt options of the Raft log: no freelist
// written per commit (it is rebuilt on open), the page size above.
func raftLogOptions() *bolt.Options {
	return &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, PageSize: raftLogPageSize}
}

// openRaftStores opens the Raft log and snapshot store under raftDir,
// their directory entries made durable.
func (n *Node) openRaftStores(raftDir string) (*raftboltdb.BoltStore, raft.SnapshotStore, error) {
	if err := os.MkdirAll(raftDir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("create raft dir %s: %w", raftDir, err)
	}
	logPath := filepath.Join(raftDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: logPath, BoltOptions: raftLogOptions()})
	if err != nil {
		return nil, nil, fmt.Errorf("open raft log %s: %w", logPath, err)
	}
	n.logStore = store
	if li, err := store.LastIndex(); err == nil {
		n.startIndex = li
	}
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(raftDir, 2, n.hclog("snapshot"))
	if err != nil {
		return nil, nil, fmt.Errorf("open snapshot store %s: %w", raftDir, err)
	}
	snaps := syncedSnapshotStore{FileSnapshotStore: fileSnaps, dir: filepath.Join(raftDir, "snapshots")}
	// raft.db, snapshots/, raft/ and fsm/ may have just been created: their
	// names must survive a power cut like the log inside them.
	if err := syncDirs(raftDir, n.cfg.DataDir); err != nil {
		return nil, nil, err
	}
	// The data dir's own name matters only on a first start; its parent
	// may be read-only to this user (systemd's ProtectSystem).
	if err := atomicfile.SyncDir(filepath.Dir(filepath.Clean(n.cfg.DataDir))); err != nil {
		n.log.Warn("could not fsync the data dir's parent", "error", err)
	}
	return store, snaps, nil
}

// listenRaftPort opens the raft port, shared by the Raft transport and
// the internal channel, and returns the internal channel's listener.
func (n *Node) listenRaftPort() (net.Listener, error) {
	cfg := n.cfg
	advertise, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("resolve raft_addr %s: %w", cfg.RaftAddr, err)
	}
	// Mutual TLS: the handshake completes before anything reaches Raft or
	// the internal channel; ALPN tells the two apart.
	refusals := &logThrottle{window: time.Minute, burst: 20}
	// Listen on every address of the box (bindAddr): a new DHCP lease
	// must not leave the port bound to an address the box lost.
	layer, internalLn, err := tlsnet.NewSharedPort(bindAddr(cfg.RaftAddr), advertise, n.opts.ServerTLS, n.opts.ClientTLS,
		tlsnet.WithRejectHandler(func(remote net.Addr, err error) {
			if ok, dropped := refusals.allow(time.Now()); ok {
				n.log.Warn("refused a connection on the raft port", "remote", remote.String(), "error", err, "suppressed", dropped)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("listen raft_addr %s: %w", cfg.RaftAddr, err)
	}
	stream := raft.StreamLayer(missedStream{StreamLayer: layer, book: n.book})
	n.closeRaftPort = func() { layer.Close(); internalLn.Close() }
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		ServerAddressProvider: peerAddress{n},
		Stream:                stream,
		MaxPool:               4,
		Timeout:               5 * time.Second,
		Logger:                n.hclog("transport"),
	})

	n.internal = &http.Server{Handler: n.internalHandler(), ReadHeaderTimeout: 5 * time.Second}
	// Peers multiplex their calls over one HTTP/2 connection (peerclient.go).
	if err := http2.ConfigureServer(n.internal, &http2.Server{MaxConcurrentStreams: 1024}); err != nil {
		return nil, fmt.Errorf("internal channel: %w", err)
	}
	return internalLn, nil
}

// raftConfig is Raft's configuration from [raft].
func (n *Node) raftConfig() *raft.Config {
	cfg := n.cfg
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.Raft.HeartbeatTimeout.Duration
	rc.ElectionTimeout = cfg.Raft.ElectionTimeout.Duration
	rc.LeaderLeaseTimeout = cfg.Raft.LeaderLeaseTimeout.Duration
	rc.CommitTimeout = cfg.Raft.CommitTimeout.Duration
	rc.SnapshotThreshold = cfg.Raft.SnapshotThreshold
	rc.SnapshotInterval = cfg.Raft.SnapshotInterval.Duration
	rc.TrailingLogs = cfg.Raft.TrailingLogs
	rc.MaxAppendEntries = cfg.Raft.MaxAppendEntries
	rc.BatchApplyCh = true
	rc.Logger = n.hclog("raft")
	return rc
}

// bootstrap starts a new cluster of the configured peers on a box without
// Raft state; a joining box waits to be added instead.
func (n *Node) bootstrap(logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore) error {
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("inspect raft state: %w", err)
	}
	if existing {
		return nil
	}
	if n.cfg.Join {
		n.log.Info("joining: waiting for the leader to add this node (POST /api/staff/cluster/members)")
		return nil
	}
	var servers []raft.Server
	for _, p := range n.cfg.Peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	// Every listed peer bootstraps the same configuration; Raft
	// treats identical bootstraps as one.
	if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap cluster: %w", err)
	}
	return nil
}

// needRestore decides whether Raft must rebuild the FSM from its newest
// snapshot at start.
// Files that were damaged were already set aside by raftfsm.Open; here
// sound files are compared with the log.
func (n *Node) needRestore(snaps raft.SnapshotStore, logs raft.LogStore) (bool, error) {
	list, err := snaps.List()
	if err != nil {
		return false, fmt.Errorf("list snapshots: %w", err)
	}
	ok, err := n.fsm.Consistent()
	if err != nil {
		return false, err
	}
	var snapIndex uint64
	if len(list) > 0 {
		snapIndex = list[0].Index
	}
	last, err := logs.LastIndex()
	if err != nil {
		return false, fmt.Errorf("read raft log: %w", err)
	}
	// Files ahead of everything this box holds durably describe another
	// history (raft/ lost or replaced): they cannot be trusted either.
	ahead := n.fsm.Applied() > max(last, snapIndex)
	if ok && !ahead && n.fsm.Applied() >= snapIndex {
		return false, nil
	}
	n.log.Warn("fsm files are behind the snapshot or disagree: rebuilding from snapshot and log",
		"fsmApplied", n.fsm.Applied(), "snapshotIndex", snapIndex, "lastLogIndex", last, "consistent", ok, "aheadOfLog", ahead)
	if err := n.fsm.Reset(); err != nil {
		return false, err
	}
	return len(list) > 0, nil
}

// dialInternal dials the internal channel of a peer; the URL host is the
// peer's raft address in the configuration, dialled where the peer book
// says the member is now (dialTarget). It returns the member's id ("" for
// an address no member has), which the TLS handshake must prove.
func (n *Node) dialInternal(ctx context.Context, _, addr string) (net.Conn, string, error) {
	id := n.memberByRaftAddr(addr)
	target := addr
	if id != "" {
		target = n.dialTarget(id, addr)
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil && id != "" {
		n.book.miss(id)
	}
	return c, id, err
}

// Stop shuts the node down cleanly: HTTP first, then Raft, then files.
// The node stays a member of the cluster (a restart, not a removal).
func (n *Node) Stop() {
	n.stop.Do(func() {
		n.cancel()
		if n.httpLn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := n.echo.Shutdown(ctx); err != nil {
				// Streams still running (kitchen screens, a backup
				// reader): cut their connections rather than wait.
				n.echo.Close()
			}
			if n.https != nil {
				if err := n.https.Shutdown(ctx); err != nil {
					n.https.Close()
				}
			}
			cancel()
		}
		if n.raft != nil {
			if err := n.raft.Shutdown().Error(); err != nil {
				n.log.Error("raft shutdown", "error", err)
			}
		}
		if n.internal != nil {
			n.internal.Close()
		}
		if n.trans != nil {
			n.trans.Close()
		}
		if n.closeRaftPort != nil {
			n.closeRaftPort()
		}
		n.peerHTTP.Load().CloseIdleConnections()
		n.diskHTTP.Load().CloseIdleConnections()
		n.wg.Wait()
		if n.logStore != nil {
			n.logStore.Close()
		}
		n.fsm.Close()
		n.endRun()
	})
}

// Fatal delivers the error of a box that cannot go on in place (a card
// read-only for longer than disk.readonly_exit_after): the process should
// stop the node and exit non-zero, so its unit or a reboot can act.
func (n *Node) Fatal() <-chan error { return n.fatal }

func (n *Node) fail(err error) {
	n.log.Error("cannot go on in place", "error", err)
	n.failed.Store(&err)
	select {
	case n.fatal <- err:
	default:
	}
}

// Done is closed when the node is stopping.
func (n *Node) Done() <-chan struct{} { return n.ctx.Done() }

// hclog adapts Raft's logger to slog, keeping Raft's chatter at warn+ and
// its lines about one peer to one a minute (raftlog.go).
func (n *Node) hclog(name string) hclog.Logger {
	level := hclog.Warn
	if n.cfg.Log.Level == "debug" {
		level = hclog.Debug
	}
	return throttledLogger{hclog.New(&hclog.LoggerOptions{
		Name:   n.cfg.NodeID + "." + name,
		Level:  level,
		Output: slogWriter{n.log.With("component", name)},
	}), &n.raftLogs}
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(b []byte) (int, error) {
	w.l.Warn(string(trimNL(b)))
	return len(b), nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// WallClock is this box's wall clock (never for anything replicated).
func (n *Node) WallClock() time.Time { return n.opts.WallClock() }

// unpipelined is the Raft transport with pipelined replication turned
// off. hashicorp/raft's pipeline can deadlock when a follower answers
// Success=false (a log mismatch after a crash, a stale term): the decoder
// stops reading while the sender parks on the in-flight channel, and the
// pipeline's Close is deferred in the parked goroutine. The follower then
// gets heartbeats but no entries, and Raft's Shutdown waits forever (seen
// as Node.Stop hanging in the node and orders suites). Plain replication
// sends one AppendEntries at a time per follower; commands are batched.
type unpipelined struct{ *raft.NetworkTransport }

func (unpipelined) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
