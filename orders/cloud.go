package orders

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"masterorder/kv"
	"masterorder/node"
	"masterorder/orders/cloudsync"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Cloud sync: the leader pushes the replicated outbox to Firestore and
// marks rows synced through Raft. What every node shows in its status
// (lastSyncAt, online, lastError) is replicated too, so any box can say
// how the cloud is doing, not only the leader. The sync runs with the
// key of masterorder.toml ([firestore] enabled) when the leader's file
// sets one, else with the key the Cloud page replicated
// (cloud_setting.go), picked up at run time.

const (
	keyCloudLastSync = "cloudsync:lastSyncAt"
	keyCloudState    = "cloudsync:state"
	keyCloudSetting  = "cloudsync:setting"
)

// cloudState is the leader's sync state as replicated. Version 2 adds
// Setting and Problem.
type cloudState struct {
	Online    bool    `json:"online"`
	LastError *string `json:"lastError"`
	// Setting is the index of the Cloud page setting the state is about
	// (0: the config file's): a state reported by a syncer since replaced
	// is not shown.
	Setting uint64 `json:"setting,omitempty"`
	// Problem is LastError's kind (cloudsync.Classify), for the page's words.
	Problem cloudsync.Problem `json:"problem,omitempty"`
}

// outbox adapts the replicated outbox to cloudsync.Outbox.
type outbox struct{ s *Service }

func (o outbox) Pending(ctx context.Context, limit int) ([]cloudsync.Change, error) {
	var out []cloudsync.Change
	err := o.s.query(func(db store.DB) error {
		rows, err := store.PendingOutbox(db, limit)
		if err != nil {
			return err
		}
		for _, r := range rows {
			ch := cloudsync.Change{Seq: uint64(r.Seq), OrderID: r.OrderID, Op: r.Op}
			if r.Op == store.OutboxUpsert {
				ord, found, err := store.GetOrder(db, r.OrderID)
				if err != nil {
					return err
				}
				if !found {
					// Archived after checkout; its delete row follows.
					ch.Op = cloudsync.OpDelete
				} else {
					doc, err := orderDoc(ord)
					if err != nil {
						return err
					}
					ch.Doc = doc
				}
			}
			out = append(out, ch)
		}
		return nil
	})
	return out, err
}

// orderDoc is the Firestore document: the API's order object.
func orderDoc(o store.Order) (map[string]any, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "source")
	return m, nil
}

func (o outbox) MarkSynced(ctx context.Context, seqs []uint64) error {
	cmd := outboxSyncedCmd{SyncedAt: time.Now().UnixMilli()}
	for _, s := range seqs {
		cmd.Seqs = append(cmd.Seqs, int64(s))
	}
	_, err := refused(o.s.propose(ctx, CmdOutboxSynced, cmd, false))
	return err
}

func applyCloudState(ctx *raftfsm.ApplyContext, tx *kv.Tx, c cloudState) ([]byte, error) {
	if err := tx.Put(keyCloudState, mustJSON(c), 0); err != nil {
		return nil, err
	}
	return ok(c)
}

// startCloudSync builds the config file's syncer when [firestore] is
// enabled (a bad section stops the start), and runs the cloud worker on
// the leader.
func (s *Service) startCloudSync(n *node.Node) error {
	fc := s.cfg.Firestore
	n.AddStatus(func(st *node.Status) {
		st.CloudSync, st.ShopName = s.cloudStatus(), s.cfg.Shop.Name
		_, st.TimeZone, _ = s.storeZone()
	})
	if fc.Enabled {
		syncer, err := cloudsync.New(s.syncConfig(fc.ProjectID, fc.CredentialsFile, nil), outbox{s}, s.node.Logger())
		if err != nil {
			return &node.ConfigError{Setting: "firestore", Problem: err.Error()}
		}
		s.fileSyncer = syncer
		go func() {
			<-n.Done()
			s.cloudRuns.Wait() // Close only after Run returned
			syncer.Close()
		}()
	}
	n.AddLeaderWorker("cloudsync", s.cloudWorker)
	return nil
}

func (s *Service) cloudLog() *slog.Logger { return s.node.Logger().With("component", "cloudsync") }

// syncConfig is the syncer's configuration for a key (a file, or a key
// file's bytes from the Cloud page); emulator_host and max_backoff come
// from the box's file either way.
func (s *Service) syncConfig(project, file string, key []byte) cloudsync.Config {
	fc := s.cfg.Firestore
	return cloudsync.Config{Enabled: true, ProjectID: project, CredentialsFile: file, Key: key,
		EmulatorHost: fc.EmulatorHost, ShopID: s.cfg.ShopID, MaxBackoff: fc.MaxBackoff.Duration}
}

// cloudWorker runs on the leader until it steps down: the config file's
// syncer when the file enables one; else the Cloud page's, started,
// replaced and stopped as the replicated setting changes (no restart);
// with neither, it drains the outbox.
func (s *Service) cloudWorker(ctx context.Context) {
	s.cloudRuns.Add(1)
	defer s.cloudRuns.Done()
	if s.fileSyncer != nil {
		s.runSyncer(ctx, s.fileSyncer, 0)
		return
	}
	for {
		setting, rev := s.cloudSetting()
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if setting == nil {
				// Without a cloud nobody reads the outbox: the leader
				// drains it, so a store that never syncs keeps a bounded
				// table.
				s.trimOutbox(runCtx)
				return
			}
			syncer, err := s.settingSyncer(setting)
			if err != nil {
				// Every box shows why; nothing runs until the page saves a
				// key again.
				s.cloudLog().Warn("cloud sync cannot start with the Cloud page's key", "error", err)
				msg := err.Error()
				s.propose(runCtx, CmdCloudState, cloudState{LastError: &msg, Setting: rev, Problem: cloudsync.ProblemOther}, false)
				<-runCtx.Done()
				return
			}
			s.runSyncer(runCtx, syncer, rev)
			syncer.Close()
		}()
		for changed := false; !changed; {
			select {
			case <-ctx.Done():
				stop()
				<-done
				return
			case <-s.cloudChanged:
				_, now := s.cloudSetting()
				changed = now != rev
			}
		}
		stop()
		<-done
	}
}

// settingSyncer opens the page's key and builds its syncer.
func (s *Service) settingSyncer(c *cloudSettingCmd) (*cloudsync.Syncer, error) {
	key, err := s.sealer.open(c.Sealed)
	if err != nil {
		return nil, err
	}
	return cloudsync.New(s.syncConfig(c.ProjectID, "", key), outbox{s}, s.node.Logger())
}

// runSyncer runs syncer until ctx ends, replicating its state as the
// state of setting (0: the file's).
func (s *Service) runSyncer(ctx context.Context, syncer *cloudsync.Syncer, setting uint64) {
	s.syncer.Store(syncer)
	defer s.syncer.Store(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := syncer.Run(ctx); err != nil && ctx.Err() == nil {
			s.node.Logger().Warn("cloud sync stopped", "error", err)
		}
	}()
	s.replicateCloudState(ctx, syncer, setting)
	<-done
}

// outboxTrimEvery is how often a store without a cloud drains its outbox:
// one command for many orders (tests shorten it).
var outboxTrimEvery = 30 * time.Second

// trimOutbox marks pending outbox rows done, a batch at a time.
func (s *Service) trimOutbox(ctx context.Context) {
	t := time.NewTicker(outboxTrimEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changes, err := outbox{s}.pendingSeqs(1000)
		if err == nil && len(changes) > 0 {
			_, err = refused(s.propose(ctx, CmdOutboxSynced, outboxSyncedCmd{Seqs: changes}, false))
		}
		if err != nil && ctx.Err() == nil {
			s.node.Logger().Warn("trim outbox", "error", err)
		}
	}
}

func (o outbox) pendingSeqs(limit int) ([]int64, error) {
	var seqs []int64
	err := o.s.query(func(db store.DB) error {
		rows, err := store.PendingOutbox(db, limit)
		for _, r := range rows {
			seqs = append(seqs, r.Seq)
		}
		return err
	})
	return seqs, err
}

// replicateCloudState records the leader's online/error state in the log
// whenever it changes, so every node's status shows it.
func (s *Service) replicateCloudState(ctx context.Context, syncer *cloudsync.Syncer, setting uint64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last *cloudState
	for {
		st := syncer.Status()
		cur := cloudState{Online: st.Online, LastError: st.LastError, Setting: setting, Problem: st.Problem}
		if last == nil || cur.Online != last.Online || !sameStr(cur.LastError, last.LastError) || cur.Problem != last.Problem {
			if _, err := refused(s.propose(ctx, CmdCloudState, cur, false)); err == nil {
				last = &cur
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sameStr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// CloudSyncStatus is status.cloudSync.
type CloudSyncStatus struct {
	Enabled    bool    `json:"enabled"`
	Online     bool    `json:"online"`
	Pending    int64   `json:"pending"`
	LastSyncAt *string `json:"lastSyncAt"`
	LastError  *string `json:"lastError"`
}

// cloudStatus is status.cloudSync now (cloudStatusFn when a test set it).
func (s *Service) cloudStatus() CloudSyncStatus {
	if s.cloudStatusFn != nil {
		return s.cloudStatusFn()
	}
	v := s.cloudView()
	return CloudSyncStatus{Enabled: v.Source != sourceNone, Online: v.Online, Pending: v.Pending, LastSyncAt: v.LastSyncAt, LastError: v.LastError}
}
