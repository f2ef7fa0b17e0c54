package cloudsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"masterorder/orders/backoff"
)

// Ops of a Change.
const (
	OpUpsert = "upsert"
	OpDelete = "delete"
)

// Field names the Syncer itself sets.
const (
	FieldOrderID  = "orderId"
	FieldSyncedAt = "syncedAt"
)

// Change is one outbox row.
type Change struct {
	Seq     uint64         // outbox sequence, increasing in commit order
	OrderID int64          // document id
	Op      string         // OpUpsert or OpDelete
	Doc     map[string]any // the whole document for an upsert (see package doc); nil for a delete
}

// Outbox is the replicated outbox, implemented by the server.
type Outbox interface {
	// Pending returns up to limit unsynced changes, oldest (lowest Seq)
	// first. It is a local read on the leader.
	Pending(ctx context.Context, limit int) ([]Change, error)
	// MarkSynced marks these changes synced through a Raft command. It may
	// fail (no quorum, lost leadership); the changes are then pushed again
	// later. Marking an already synced or unknown Seq must be a no-op.
	MarkSynced(ctx context.Context, seqs []uint64) error
}

// Status is the sync worker's view, for the cluster status. The pending
// count comes from the outbox, not from here.
type Status struct {
	Enabled bool `json:"enabled"`
	// Online: the last call to Firestore (a push, or an idle probe)
	// succeeded. False before the first call.
	Online bool `json:"online"`
	// LastSyncAt: when the last batch was written and marked synced; nil
	// before the first one.
	LastSyncAt *time.Time `json:"lastSyncAt"`
	// LastError: the error of the last attempt; nil once an attempt
	// succeeds.
	LastError *string `json:"lastError"`
	// Problem: the kind of LastError (Classify), "" without one.
	Problem Problem `json:"problem,omitempty"`
	// OfflineSince: when Firestore calls started failing; nil while online
	// or before the first call.
	OfflineSince *time.Time `json:"offlineSince,omitempty"`
	// Active: Run is running here (this node is the leader's pusher). A
	// follower's Syncer keeps the values it had when it last ran.
	Active bool `json:"-"`
}

// Syncer pushes the outbox to Firestore while Run runs.
type Syncer struct {
	cfg    Config
	outbox Outbox
	log    *slog.Logger
	opts   []option.ClientOption // how to reach Firestore
	conn   *grpc.ClientConn      // our own connection to an emulator, if any
	projID string

	wake    chan struct{}
	running atomic.Bool

	clientMu sync.Mutex
	client   *firestore.Client // created by the first Run, kept until Close
	closed   bool

	mu          sync.Mutex
	st          Status
	lastContact time.Time // last successful Firestore call
	lastLogged  string    // last error logged at Warn, to log each new error once

	// lastRPCErr is the last error a single RPC returned. The client
	// library retries Unavailable inside a call until the deadline and then
	// reports only "deadline exceeded"; this keeps the cause (connection
	// refused, DNS, auth) for the status.
	lastRPCErr atomic.Pointer[rpcError]
}

type rpcError struct {
	err error
	at  time.Time
}

// New checks the configuration and prepares a Syncer. It does no network
// I/O; with Enabled false it returns a Syncer whose Run returns at once.
// A missing, unreadable or malformed key (Key, or CredentialsFile when
// enabled without an emulator) is an error. With EmulatorHost set, the
// client talks plain gRPC to that address, with the key's own tokens when
// Key is set, else with the emulator's owner token; no environment
// variable is read or needed.
func New(cfg Config, outbox Outbox, logger *slog.Logger) (*Syncer, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Syncer{
		cfg:    cfg,
		outbox: outbox,
		log:    logger.With("component", "cloudsync"),
		wake:   make(chan struct{}, 1),
		st:     Status{Enabled: cfg.Enabled},
	}
	if !cfg.Enabled {
		return s, nil
	}
	if outbox == nil {
		return nil, errors.New("cloudsync: nil outbox")
	}

	ep, err := dial(cfg, grpc.WithChainUnaryInterceptor(s.noteRPCError), grpc.WithChainStreamInterceptor(s.noteStreamError))
	if err != nil {
		return nil, err
	}
	s.opts, s.conn, s.projID = ep.opts, ep.conn, ep.project
	return s, nil
}

// endpoint is how to reach Firestore: client options, the connection we
// own (to an emulator) and the project.
type endpoint struct {
	opts    []option.ClientOption
	conn    *grpc.ClientConn
	project string
}

// dial prepares the way to Firestore for cfg (checked by withDefaults),
// with the extra dial options (interceptors). It does no network I/O.
func dial(cfg Config, extra ...grpc.DialOption) (endpoint, error) {
	reconnect := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: grpcbackoff.Config{
			BaseDelay:  min(time.Second, cfg.MaxBackoff),
			Multiplier: 1.6,
			Jitter:     0.2,
			MaxDelay:   min(10*time.Second, cfg.MaxBackoff),
		},
		MinConnectTimeout: cfg.CallTimeout,
	})
	var key *Key
	switch {
	case cfg.Key != nil:
		k, err := ParseKey(cfg.Key, cfg.ProjectID == "")
		if err != nil {
			return endpoint{}, err
		}
		key = &k
	case cfg.EmulatorHost == "":
		k, err := loadKeyFile(cfg.CredentialsFile)
		if err != nil {
			return endpoint{}, err
		}
		key = &k
	}
	ep := endpoint{project: cfg.ProjectID}
	if ep.project == "" && key != nil {
		ep.project = key.ProjectID
	}
	var creds *auth.Credentials
	if key != nil {
		var err error
		if creds, err = key.credentials(); err != nil {
			return endpoint{}, err
		}
	}

	if cfg.EmulatorHost != "" {
		if ep.project == "" {
			ep.project = EmulatorProjectID
		}
		var perRPC credentials.PerRPCCredentials = emulatorOwner{}
		if creds != nil {
			perRPC = keyTokens{creds}
		}
		conn, err := grpc.NewClient("passthrough:///"+cfg.EmulatorHost,
			append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(perRPC), reconnect}, extra...)...)
		if err != nil {
			return endpoint{}, fmt.Errorf("cloudsync: [firestore] emulator_host %q: %v", cfg.EmulatorHost, err)
		}
		ep.conn = conn
		ep.opts = []option.ClientOption{option.WithGRPCConn(conn)}
		return ep, nil
	}

	if v := os.Getenv("FIRESTORE_EMULATOR_HOST"); v != "" {
		// The firestore library would quietly send everything there.
		return endpoint{}, fmt.Errorf("cloudsync: FIRESTORE_EMULATOR_HOST=%s is set in the environment but [firestore] emulator_host is empty; unset the variable or set emulator_host", v)
	}
	if ep.project == "" {
		return endpoint{}, errors.New("cloudsync: [firestore] project_id is empty and the credentials file names no project_id")
	}
	ep.opts = []option.ClientOption{option.WithAuthCredentials(creds), option.WithGRPCDialOption(reconnect)}
	for _, o := range extra {
		ep.opts = append(ep.opts, option.WithGRPCDialOption(o))
	}
	return ep, nil
}

// ProjectID is the Firestore project the Syncer writes to.
func (s *Syncer) ProjectID() string { return s.projID }

// Collection is the path of the orders collection, shops/{shopId}/orders.
func (s *Syncer) Collection() string { return "shops/" + s.cfg.ShopID + "/orders" }

// Notify tells a running Syncer that new outbox rows are committed. It
// never blocks. A Syncer waiting after a failure keeps its backoff; the new
// rows go with the next attempt.
func (s *Syncer) Notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Status returns a copy of the current status; safe for concurrent use.
func (s *Syncer) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.LastSyncAt = copyPtr(st.LastSyncAt)
	st.LastError = copyPtr(st.LastError)
	st.OfflineSince = copyPtr(st.OfflineSince)
	return st
}

// Close releases the Firestore connection. Run must have returned.
func (s *Syncer) Close() error {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.client != nil {
		errs = append(errs, s.client.Close())
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	return errors.Join(errs...)
}

// Run pushes the outbox until ctx is done, then returns nil. Call it on the
// leader only and cancel ctx when leadership is lost; it can be called
// again after it returned (next term). It returns an error only when it
// cannot start: the Syncer is closed or already running. With sync
// disabled it returns nil at once.
func (s *Syncer) Run(ctx context.Context) error {
	if !s.cfg.Enabled {
		return nil
	}
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("cloudsync: Run is already running")
	}
	defer s.running.Store(false)
	client, err := s.firestoreClient(ctx)
	if err != nil {
		return err
	}
	s.setActive(true)
	defer s.setActive(false)
	s.log.Info("cloud sync started", "project", s.projID, "collection", s.Collection(), "emulator", s.cfg.EmulatorHost)

	failures := 0
	var idle *time.Timer
	for {
		// Rows committed before this point are seen by the pass below.
		select {
		case <-s.wake:
		default:
		}
		n, err := s.pass(ctx, client)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures++
			d := s.backoff(failures)
			s.log.Debug("cloud sync attempt failed", "attempt", failures, "retry_in", d, "err", err)
			if !backoff.Sleep(ctx, d) {
				return nil
			}
			continue
		}
		failures = 0
		if n > 0 {
			continue // more may be pending; Pending is a cheap local read
		}
		var tick <-chan time.Time
		if s.cfg.ProbeInterval > 0 {
			if idle == nil {
				idle = time.NewTimer(s.cfg.ProbeInterval)
				defer idle.Stop()
			} else {
				idle.Reset(s.cfg.ProbeInterval)
			}
			tick = idle.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-tick:
		}
	}
}

func (s *Syncer) firestoreClient(ctx context.Context) (*firestore.Client, error) {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.closed {
		return nil, errors.New("cloudsync: Syncer is closed")
	}
	if s.client != nil {
		return s.client, nil
	}
	// The client outlives this Run (and its ctx): it is kept for the next term.
	c, err := firestore.NewClient(context.WithoutCancel(ctx), s.projID, s.opts...)
	if err != nil {
		return nil, fmt.Errorf("cloudsync: creating the Firestore client: %w", err)
	}
	s.client = c
	return c, nil
}

// pass pushes at most one batch. It returns how many changes it marked
// synced.
func (s *Syncer) pass(ctx context.Context, client *firestore.Client) (int, error) {
	changes, err := s.outbox.Pending(ctx, s.cfg.BatchSize)
	if err != nil {
		return 0, s.localFailure(ctx, "reading the outbox", err)
	}
	if len(changes) > s.cfg.BatchSize {
		changes = changes[:s.cfg.BatchSize]
	}
	if len(changes) == 0 {
		if s.needProbe() {
			start := time.Now()
			if err := s.probe(ctx, client); err != nil {
				return 0, s.cloudFailure(ctx, err, start)
			}
			s.cloudOK()
		}
		s.succeeded(false)
		return 0, nil
	}
	writes, skips, seqs, err := plan(changes)
	if err != nil {
		return 0, s.localFailure(ctx, "cannot push", err)
	}
	for _, sk := range skips {
		s.log.Error("cloud sync skips a change whose document cannot be written", "seq", sk.seq, "order_id", sk.orderID, "err", sk.err)
	}
	start := time.Now()
	if err := s.push(ctx, client, writes); err != nil {
		return 0, s.cloudFailure(ctx, err, start)
	}
	s.cloudOK()

	mctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	err = s.outbox.MarkSynced(mctx, seqs)
	cancel()
	if err != nil {
		return 0, s.localFailure(ctx, "marking synced", err)
	}
	s.succeeded(true)
	s.log.Debug("cloud sync pushed", "changes", len(changes), "documents", len(writes), "upto_seq", seqs[len(seqs)-1])
	return len(changes), nil
}

// push writes one batch in one atomic Commit: every write lands or none
// does (at most MaxBatchSize, Firestore's limit for a Commit). Not the
// BulkWriter: its BatchWrite calls are refused by the emulator to any
// token but its owner's, so a test could never see a store's own key
// write orders under the emulator's rules, and a store's few hundred
// changes need one call, not its parallel ramp-up. WriteBatch is marked
// deprecated in favour of those two, but remains the library's one call
// for a plain atomic Commit.
func (s *Syncer) push(ctx context.Context, client *firestore.Client, writes []write) error {
	if len(writes) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	coll := client.Collection(s.Collection())
	batch := client.Batch()
	for _, w := range writes {
		ref := coll.Doc(strconv.FormatInt(w.orderID, 10))
		if w.delete {
			batch.Delete(ref)
		} else {
			w.doc[FieldSyncedAt] = firestore.ServerTimestamp
			batch.Set(ref, w.doc)
		}
	}
	if _, err := batch.Commit(wctx); err != nil {
		return fmt.Errorf("writing %d document(s): %w", len(writes), err)
	}
	return nil
}

// probe checks that Firestore answers, with one document read.
func (s *Syncer) probe(ctx context.Context, client *firestore.Client) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	_, err := client.Doc("shops/" + s.cfg.ShopID).Get(pctx)
	if err == nil || status.Code(err) == codes.NotFound {
		return nil
	}
	return fmt.Errorf("checking reachability: %w", err)
}

func (s *Syncer) needProbe() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.ProbeInterval < 0 {
		return false
	}
	return !s.st.Online || time.Since(s.lastContact) >= s.cfg.ProbeInterval
}

// cloudFailure records a failed Firestore call that started at since.
func (s *Syncer) cloudFailure(ctx context.Context, err error, since time.Time) error {
	if ctx.Err() != nil {
		return ctx.Err() // stopping, not failing
	}
	if isTimeout(err) {
		err = fmt.Errorf("no answer from Firestore within %v: %w", s.cfg.CallTimeout, err)
		if last := s.lastRPCErr.Load(); last != nil && !last.at.Before(since) && !isTimeout(last.err) {
			err = fmt.Errorf("%w; last RPC error: %v", err, last.err)
		}
	}
	now := time.Now()
	s.mu.Lock()
	if s.st.OfflineSince == nil {
		s.st.OfflineSince = &now
	}
	s.st.Online = false
	s.mu.Unlock()
	return s.failure(err, Classify(err))
}

// localFailure records a failure on our side (outbox read, MarkSynced).
// Online is left as it is: it is about Firestore.
func (s *Syncer) localFailure(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // stopping, not failing
	}
	return s.failure(fmt.Errorf("%s: %w", what, err), ProblemLocal)
}

func (s *Syncer) failure(err error, p Problem) error {
	msg := err.Error()
	s.mu.Lock()
	s.st.LastError = &msg
	s.st.Problem = p
	log := msg != s.lastLogged
	s.lastLogged = msg
	s.mu.Unlock()
	if log {
		s.log.Warn("cloud sync failed, will retry", "err", msg)
	}
	return err
}

// cloudOK records a successful Firestore call.
func (s *Syncer) cloudOK() {
	now := time.Now()
	s.mu.Lock()
	wasOffline := s.st.OfflineSince
	s.st.Online = true
	s.st.OfflineSince = nil
	s.lastContact = now
	s.mu.Unlock()
	if wasOffline != nil {
		s.log.Info("cloud sync: Firestore reachable again", "offline_for", now.Sub(*wasOffline).Round(time.Millisecond))
	}
}

// succeeded records an attempt that did all it had to do.
func (s *Syncer) succeeded(synced bool) {
	now := time.Now()
	s.mu.Lock()
	if synced {
		s.st.LastSyncAt = &now
	}
	s.st.LastError = nil
	s.st.Problem = ""
	s.lastLogged = ""
	s.mu.Unlock()
}

func (s *Syncer) noteRPCError(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		s.noteErr(err)
	}
	return err
}

func (s *Syncer) noteStreamError(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		s.noteErr(err)
		return nil, err
	}
	return &notingStream{ClientStream: cs, s: s}, nil
}

type notingStream struct {
	grpc.ClientStream
	s *Syncer
}

func (n *notingStream) RecvMsg(m any) error {
	err := n.ClientStream.RecvMsg(m)
	if err != nil && err != io.EOF {
		n.s.noteErr(err)
	}
	return err
}

func (s *Syncer) noteErr(err error) {
	if status.Code(err) != codes.Canceled {
		s.lastRPCErr.Store(&rpcError{err: err, at: time.Now()})
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

func (s *Syncer) setActive(v bool) {
	s.mu.Lock()
	s.st.Active = v
	s.mu.Unlock()
}

// backoff is exponential with full jitter from MinBackoff up to
// MaxBackoff, as the printers' senders wait.
func (s *Syncer) backoff(failures int) time.Duration {
	return backoff.Full(failures, s.cfg.MinBackoff, s.cfg.MaxBackoff)
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// emulatorOwner is the token the Firestore emulator accepts as an admin
// (the same one the firestore library sends with FIRESTORE_EMULATOR_HOST).
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (emulatorOwner) RequireTransportSecurity() bool { return false }
