package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Rebuild from a peer: when every local snapshot is unusable (torn, bad
// checksum) and the log no longer starts at index 1, neither a snapshot
// nor a log replay can rebuild the replica, and raft.NewRaft refuses to
// start ("failed to load any existing snapshots"). The box then fetches a
// point-in-time snapshot from a peer over the internal channel, stores it
// as a Raft snapshot and starts Raft normally.
//
// Why this is safe: the Raft log and the stable store (current term, vote)
// are never touched. The box keeps every vote it cast and every entry it
// acknowledged; the fetched snapshot is committed state (a peer's FSM
// applies only committed entries) at an index S no lower than the local
// log's first index − 1 and no lower than any local snapshot it replaces,
// so snapshot + log still hold everything this box ever acknowledged, and
// the last index/term it offers in an election is one it really holds.
// Wiping the log instead would let it vote for a candidate missing
// committed entries.

// Headers of GET /internal/snapshot: what a Raft snapshot needs besides
// the FSM bytes, and (as a trailer, known only at the end) their digest.
const (
	snapIndexHdr     = "X-MasterOrder-Snapshot-Index"
	snapTermHdr      = "X-MasterOrder-Snapshot-Term"
	snapConfHdr      = "X-MasterOrder-Snapshot-Configuration"
	snapConfIndexHdr = "X-MasterOrder-Snapshot-Configuration-Index"
	snapDigestHdr    = "X-MasterOrder-Snapshot-Sha256"
)

// unusableSnapshotsDir keeps the snapshots that failed their checksum
// (for a post-mortem); raft's store never lists it.
const unusableSnapshotsDir = "snapshots-unusable"

// Backoff between rounds over the peers while none gives a snapshot.
const (
	rebuildBackoffMin = 500 * time.Millisecond
	rebuildBackoffMax = 10 * time.Second
	peerAnswerTimeout = 60 * time.Second // a peer copies its files before it answers
)

// serveSnapshot is GET /internal/snapshot: a point-in-time copy of the
// replica with the index, term and configuration a Raft snapshot of it
// needs, and its SHA-256 as a trailer.
func (n *Node) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	c, err := n.fsm.Capture()
	if err == nil {
		defer c.Close()
		err = c.Wait(r.Context())
	}
	var term, confIndex uint64
	var conf []byte
	if err == nil {
		term, conf, confIndex, err = n.snapshotMeta(c.Index)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set(snapIndexHdr, strconv.FormatUint(c.Index, 10))
	h.Set(snapTermHdr, strconv.FormatUint(term, 10))
	h.Set(snapConfHdr, string(conf))
	h.Set(snapConfIndexHdr, strconv.FormatUint(confIndex, 10))
	h.Set("Trailer", snapDigestHdr)
	sum := sha256.New()
	if err := n.StreamCapture(w, c, sum); err != nil {
		n.log.Warn("stream snapshot", "error", err)
		return
	}
	h.Set(snapDigestHdr, hex.EncodeToString(sum.Sum(nil)))
}

// snapshotMeta finds the term of the entry at index (an applied index)
// and the configuration in effect there.
func (n *Node) snapshotMeta(index uint64) (term uint64, conf []byte, confIndex uint64, err error) {
	if index == 0 {
		return 0, nil, 0, errors.New("this replica holds no applied entries")
	}
	// An applied index above the last snapshot is never compacted; at the
	// snapshot (a restore, an install) the snapshot knows its term.
	var l raft.Log
	if n.logStore.GetLog(index, &l) == nil {
		term = l.Term
	} else if st := n.raft.Stats(); st["last_snapshot_index"] == strconv.FormatUint(index, 10) {
		term, _ = strconv.ParseUint(st["last_snapshot_term"], 10, 64)
	}
	if term == 0 {
		return 0, nil, 0, fmt.Errorf("term of index %d no longer known (compacted meanwhile): retry", index)
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, nil, 0, fmt.Errorf("configuration: %w", err)
	}
	// The latest configuration, read after the capture, is the one in
	// effect at index when it is not newer than index.
	if f.Index() > index || len(f.Configuration().Servers) == 0 {
		return 0, nil, 0, fmt.Errorf("configuration at index %d not known (latest is at %d): retry", index, f.Index())
	}
	conf, err = json.Marshal(f.Configuration())
	return term, conf, f.Index(), err
}

// rebuildIfNoSnapshot runs before raft.NewRaft. restore says whether Raft
// must load a snapshot into the (reset) FSM. When no local snapshot is
// usable and the log cannot rebuild the replica, it fetches one from a
// peer (retrying until one answers or ctx ends) and restores the FSM from
// it; it returns the new value of restore.
func (n *Node) rebuildIfNoSnapshot(ctx context.Context, raftDir string, snaps raft.SnapshotStore, store *raftboltdb.BoltStore, restore bool) (bool, error) {
	list, err := snaps.List()
	if err != nil {
		return restore, fmt.Errorf("list snapshots: %w", err)
	}
	first, err := store.FirstIndex()
	if err != nil {
		return restore, fmt.Errorf("read raft log: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return restore, fmt.Errorf("read raft log: %w", err)
	}
	if len(list) == 0 && first <= 1 {
		return restore, nil // a new box, or a log that still starts at 1
	}
	// Without a restore Raft opens no snapshot, but it still needs one
	// when the log does not start at 1 (it would replay from index 1).
	if len(list) > 0 && !restore {
		return restore, nil
	}
	for _, meta := range list {
		_, rc, err := snaps.Open(meta.ID) // checks the checksum
		if err == nil {
			rc.Close()
			return restore, nil
		}
		n.log.Warn("snapshot unusable", "id", meta.ID, "index", meta.Index, "error", err)
	}
	// No snapshot opens. Raft would refuse them all: keep them aside.
	need := uint64(0)
	if first > 1 {
		need = first - 1
	}
	for _, meta := range list {
		need = max(need, meta.Index)
	}
	if err := setAsideSnapshots(raftDir, list); err != nil {
		return restore, err
	}
	if first == 1 && need <= last {
		n.log.Warn("no usable snapshot: rebuilding from the whole log", "lastLogIndex", last)
		return false, nil
	}
	n.log.Warn("no usable snapshot and the log starts past index 1: fetching a snapshot from a peer",
		"firstLogIndex", first, "lastLogIndex", last, "needIndex", need)
	if err := n.fetchFromPeers(ctx, raftDir, snaps, need); err != nil {
		return restore, err
	}
	// The FSM now holds the fetched snapshot: Raft takes it as is.
	return false, nil
}

// setAsideSnapshots moves snapshots into raft/snapshots-unusable (kept,
// out of the store's sight), durably.
func setAsideSnapshots(raftDir string, list []*raft.SnapshotMeta) error {
	if len(list) == 0 {
		return nil
	}
	aside := filepath.Join(raftDir, unusableSnapshotsDir)
	if err := os.MkdirAll(aside, 0o750); err != nil {
		return fmt.Errorf("set snapshots aside: %w", err)
	}
	src := filepath.Join(raftDir, "snapshots")
	for _, meta := range list {
		dst := filepath.Join(aside, meta.ID)
		if _, err := os.Stat(dst); err == nil {
			dst += "." + strconv.FormatInt(time.Now().UnixNano(), 10)
		}
		if err := os.Rename(filepath.Join(src, meta.ID), dst); err != nil {
			return fmt.Errorf("set snapshot %s aside: %w", meta.ID, err)
		}
	}
	return syncDirs(aside, src, raftDir)
}

// fetchFromPeers asks each configured peer in turn for a snapshot at an
// index ≥ need, round after round with backoff, until one is stored. The
// node serves nothing meanwhile (Start has not opened any port).
func (n *Node) fetchFromPeers(ctx context.Context, raftDir string, snaps raft.SnapshotStore, need uint64) error {
	start := time.Now()
	backoff := rebuildBackoffMin
	for round := 1; ; round++ {
		for _, p := range n.cfg.Peers {
			if p.ID == n.cfg.NodeID {
				continue
			}
			index, err := n.fetchFrom(ctx, p, raftDir, snaps, need)
			if err == nil {
				n.log.Info("rebuilt from a peer's snapshot", "peer", p.ID, "index", index, "after", time.Since(start).Round(time.Millisecond))
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("stopped while waiting for a peer's snapshot: %w", ctx.Err())
			}
			n.log.Warn("rebuild: peer gave no usable snapshot", "peer", p.ID, "round", round, "error", err)
		}
		n.log.Warn("rebuild: no peer gave a usable snapshot yet; not serving until one does", "round", round, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for a peer's snapshot: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, rebuildBackoffMax)
	}
}

// fetchFrom fetches, verifies and stores one peer's snapshot; it returns
// the snapshot's index.
func (n *Node) fetchFrom(ctx context.Context, p Peer, raftDir string, snaps raft.SnapshotStore, need uint64) (uint64, error) {
	// A peer that accepts but does not answer (itself waiting to start)
	// must not hold the round: the headers come within peerAnswerTimeout.
	// The body then streams as long as it flows (the peer's write deadline
	// and the transport's pings bound a stall).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answer := time.AfterFunc(peerAnswerTimeout, cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(p.RaftAddr, "/internal/snapshot"), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.peerHTTP.Load().Do(req)
	if !answer.Stop() && err == nil {
		resp.Body.Close()
		err = fmt.Errorf("no answer within %v", peerAnswerTimeout)
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, trimNL(b))
	}
	index, err1 := strconv.ParseUint(resp.Header.Get(snapIndexHdr), 10, 64)
	term, err2 := strconv.ParseUint(resp.Header.Get(snapTermHdr), 10, 64)
	confIndex, err3 := strconv.ParseUint(resp.Header.Get(snapConfIndexHdr), 10, 64)
	var conf raft.Configuration
	err4 := json.Unmarshal([]byte(resp.Header.Get(snapConfHdr)), &conf)
	if err := errors.Join(err1, err2, err3, err4); err != nil || index == 0 || term == 0 || len(conf.Servers) == 0 {
		return 0, fmt.Errorf("snapshot without index, term or configuration (a peer of an older version?): %v", err)
	}
	// Raft replays the local log after the snapshot: it must not leave a
	// gap before the log's first entry, nor fall behind a snapshot this
	// box held.
	if index < need {
		return 0, fmt.Errorf("peer's snapshot is at index %d, this box needs at least %d", index, need)
	}

	tmp, err := os.CreateTemp(raftDir, "peer-*.snap")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	sum := sha256.New()
	size, err := io.Copy(io.MultiWriter(tmp, sum), resp.Body)
	if err != nil {
		return 0, fmt.Errorf("read snapshot: %w", err)
	}
	// The trailer is read with the end of the body.
	if want, got := resp.Trailer.Get(snapDigestHdr), hex.EncodeToString(sum.Sum(nil)); want == "" || want != got {
		return 0, fmt.Errorf("snapshot digest mismatch (%d bytes, sha256 %s, peer says %q)", size, got, want)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	applied, err := restoreChecked(n.fsm, tmp)
	if err != nil {
		return 0, err
	}
	if applied != index {
		return 0, fmt.Errorf("snapshot holds applied index %d, its header says %d", applied, index)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	sink, err := snaps.Create(1, index, term, conf, confIndex, n.trans)
	if err != nil {
		return 0, fmt.Errorf("create raft snapshot: %w", err)
	}
	if _, err := io.Copy(sink, tmp); err != nil {
		sink.Cancel()
		return 0, fmt.Errorf("write raft snapshot: %w", err)
	}
	// The synced sink fsyncs the files, the snapshot directory and its
	// parent.
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("write raft snapshot: %w", err)
	}
	return index, nil
}
