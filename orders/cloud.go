package orders

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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
// how the cloud is doing, not only the leader.

const (
	keyCloudLastSync = "cloudsync:lastSyncAt"
	keyCloudState    = "cloudsync:state"
)

// cloudState is the leader's sync state as replicated.
type cloudState struct {
	Online    bool    `json:"online"`
	LastError *string `json:"lastError"`
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

// startCloudSync builds the syncer when [firestore] is enabled and runs it
// on the leader.
func (s *Service) startCloudSync(n *node.Node) error {
	fc := s.cfg.Firestore
	n.AddStatus(func(st *node.Status) { st.CloudSync, st.ShopName = s.cloudStatus(), s.cfg.Shop.Name })
	if !fc.Enabled {
		// Without a cloud nobody reads the outbox: the leader drains it,
		// so a store that never syncs keeps a bounded table.
		n.AddLeaderWorker("outbox-trim", s.trimOutbox)
		return nil
	}
	syncer, err := cloudsync.New(cloudsync.Config{Enabled: true, ProjectID: fc.ProjectID, CredentialsFile: fc.CredentialsFile,
		EmulatorHost: fc.EmulatorHost, ShopID: s.cfg.ShopID, MaxBackoff: fc.MaxBackoff.Duration}, outbox{s}, n.Logger().With("component", "cloudsync"))
	if err != nil {
		return &node.ConfigError{Setting: "firestore", Problem: err.Error()}
	}
	s.syncer = syncer
	var running sync.WaitGroup
	go func() {
		<-n.Done()
		running.Wait() // Close only after Run returned
		syncer.Close()
	}()
	n.AddLeaderWorker("cloudsync", func(ctx context.Context) {
		running.Add(1)
		defer running.Done()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := syncer.Run(ctx); err != nil && ctx.Err() == nil {
				n.Logger().Warn("cloud sync stopped", "error", err)
			}
		}()
		s.replicateCloudState(ctx, syncer)
		<-done
	})
	return nil
}

// trimOutbox marks pending outbox rows done, a batch at a time.
func (s *Service) trimOutbox(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
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
func (s *Service) replicateCloudState(ctx context.Context, syncer *cloudsync.Syncer) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last *cloudState
	for {
		st := syncer.Status()
		cur := cloudState{Online: st.Online, LastError: st.LastError}
		if last == nil || cur.Online != last.Online || !sameStr(cur.LastError, last.LastError) {
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
	st := CloudSyncStatus{Enabled: s.cfg.Firestore.Enabled}
	s.query(func(db store.DB) error {
		n, err := store.CountOutbox(db)
		st.Pending = n
		return err
	})
	if e, live, err := s.node.KV().Get(keyCloudLastSync); err == nil && live {
		var ms int64
		if _, err := fmt.Sscan(string(e.Value), &ms); err == nil && ms > 0 {
			t := store.FormatTime(ms)
			st.LastSyncAt = &t
		}
	}
	if e, live, err := s.node.KV().Get(keyCloudState); err == nil && live {
		var c cloudState
		if json.Unmarshal(e.Value, &c) == nil {
			st.Online, st.LastError = c.Online, c.LastError
		}
	}
	return st
}
