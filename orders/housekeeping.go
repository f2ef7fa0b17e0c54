package orders

import (
	"fmt"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Long-life upkeep: archiving and pruning, and the cloud outbox.

type housekeepingCmd struct {
	// AuditKeepMs and ArchiveKeepMs are the retentions, judged inside
	// Apply on FSM time: no box's wall clock decides what is deleted.
	AuditKeepMs   int64 `json:"auditKeepMs,omitempty"`
	ArchiveKeepMs int64 `json:"archiveKeepMs,omitempty"`
	// The *BeforeWall cutoffs (the proposer's wall clock) come from
	// builds before that; still honoured so an old log replays alike.
	ArchiveBeforeWall int64 `json:"archiveBeforeWall,omitempty"`
	AuditBeforeWall   int64 `json:"auditBeforeWall,omitempty"`
	Limit             int   `json:"limit"`
}

// keptSince is the FSM-time cutoff of a retention (0: keep everything).
func keptSince(now, keepMs int64) int64 {
	if keepMs <= 0 || now <= keepMs {
		return 0
	}
	return now - keepMs
}

// housekeepingWith is the housekeeping handler: it moves closed
// sessions' orders into the archive and prunes old audit rows, in bounded
// steps, so a box that runs for years keeps a bounded live database; st
// forgets the order ids it frees.
func housekeepingWith(st *admitState) applyFunc[housekeepingCmd] {
	return func(ctx *raftfsm.ApplyContext, tx *kv.Tx, c housekeepingCmd) ([]byte, error) {
		if c.Limit <= 0 || c.Limit > 10000 {
			c.Limit = 1000
		}
		if err := store.StampRetention(ctx.DB, ctx.Now); err != nil {
			return nil, err
		}
		n, err := store.ArchiveClosed(ctx.DB, ctx.WallTime, ctx.Now, c.Limit)
		if err != nil {
			return nil, err
		}
		pruned, err := store.PruneAudit(ctx.DB, keptSince(ctx.Now, c.AuditKeepMs), c.Limit, store.RetainFSM)
		if err != nil {
			return nil, err
		}
		freed, err := store.PruneArchiveIDs(ctx.DB, keptSince(ctx.Now, c.ArchiveKeepMs), c.Limit, store.RetainFSM)
		if err != nil {
			return nil, err
		}
		st.freed(ctx, freed)
		archPruned := int64(len(freed))
		if c.AuditBeforeWall > 0 || c.ArchiveBeforeWall > 0 {
			p, err := store.PruneAudit(ctx.DB, c.AuditBeforeWall, c.Limit, store.RetainWall)
			if err != nil {
				return nil, err
			}
			freed, err := store.PruneArchiveIDs(ctx.DB, c.ArchiveBeforeWall, c.Limit, store.RetainWall)
			if err != nil {
				return nil, err
			}
			st.freed(ctx, freed)
			pruned, archPruned = pruned+p, archPruned+int64(len(freed))
		}
		return ok(map[string]int64{"archived": n, "auditPruned": pruned, "archivePruned": archPruned})
	}
}

type outboxSyncedCmd struct {
	Seqs     []int64 `json:"seqs"`
	SyncedAt int64   `json:"syncedAt"` // leader's wall clock, for display
}

func applyOutboxSynced(ctx *raftfsm.ApplyContext, tx *kv.Tx, c outboxSyncedCmd) ([]byte, error) {
	if err := store.DeleteOutbox(ctx.DB, c.Seqs); err != nil {
		return nil, err
	}
	if c.SyncedAt > 0 {
		if err := tx.Put(keyCloudLastSync, []byte(fmt.Sprint(c.SyncedAt)), 0); err != nil {
			return nil, err
		}
	}
	return ok(map[string]int{"synced": len(c.Seqs)})
}
