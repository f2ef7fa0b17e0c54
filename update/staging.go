package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"masterorder/node/atomicfile"
)

// The bundle the manager offers the store: uploaded from the tablet, or
// downloaded from the release index on the manager's tap. It is kept
// (verified) in the data directory of the box the console talked to;
// the other boxes fetch it from there when the leader asks them to
// install.

const (
	stagedName = "staged.raucb"
	stagedMeta = "staged.json"
)

// States of the offered bundle.
const (
	StagedNone        = "none"
	StagedDownloading = "downloading"
	StagedReady       = "ready"
	StagedFailed      = "failed"
)

// Staged is the offered bundle.
type Staged struct {
	State      string `json:"state"`
	Source     string `json:"source,omitempty"` // "file" or "index"
	Version    string `json:"version,omitempty"`
	Compatible string `json:"compatible,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	Size       int64  `json:"size,omitempty"`
	// Downgrade: older than this box runs; starting it needs the
	// owner's confirmation.
	Downgrade bool `json:"downgrade,omitempty"`
	Reason
}

// ReleaseIndex is the release side's small JSON (docs/packaging.md).
type ReleaseIndex struct {
	Version    string `json:"version"`
	Compatible string `json:"compatible"`
	URL        string `json:"url"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
}

func loadStaged(dir string) Staged {
	var s Staged
	b, err := os.ReadFile(filepath.Join(dir, stagedMeta))
	if err != nil || json.Unmarshal(b, &s) != nil || s.State == "" {
		return Staged{State: StagedNone}
	}
	if s.State == StagedDownloading { // the process stopped mid-download
		s = Staged{State: StagedFailed, Reason: Reason{Error: CodeIndexFailed, Detail: "the download was interrupted"}}
	}
	return s
}

func (b *Box) setStaged(s Staged) {
	b.mu.Lock()
	b.staged = s
	b.mu.Unlock()
	if raw, err := json.Marshal(s); err == nil {
		if err := atomicfile.WriteFile(filepath.Join(b.dir, stagedMeta), raw, 0o600); err != nil {
			b.log.Error("update: offered bundle not recorded", "error", err)
		}
	}
}

// Staged is the offered bundle.
func (b *Box) Staged() Staged {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.staged
}

// stage verifies the bundle written at tmp and, when RAUC accepts it for
// this board, makes it the offered one. A downgrade is offered, marked.
func (b *Box) stage(ctx context.Context, tmp, sum string, size int64, source string) (Staged, error) {
	bundle, err := Verify(ctx, tmp, Expect{Keyring: b.cfg.Keyring, Compatible: b.cfg.Compatible, Running: b.version, AllowDowngrade: true})
	if err != nil {
		os.Remove(tmp)
		return Staged{}, err
	}
	if err := os.Rename(tmp, filepath.Join(b.dir, stagedName)); err != nil {
		return Staged{}, err
	}
	c, ok := Compare(bundle.Version, b.version)
	s := Staged{State: StagedReady, Source: source, Version: bundle.Version, Compatible: bundle.Compatible,
		SHA256: sum, Size: size, Downgrade: ok && c < 0}
	b.setStaged(s)
	b.log.Info("update: bundle offered", "version", s.Version, "source", source, "sha256", sum)
	return s, nil
}

// Upload streams an uploaded bundle to disk (bounded), verifies it and
// offers it; size is its announced length (0: unknown), checked against
// the card's room first. progress is called between chunks.
func (b *Box) Upload(ctx context.Context, body io.Reader, size int64, progress func()) (Staged, error) {
	if err := b.notRollingOut(); err != nil {
		return Staged{}, err
	}
	if err := b.checkRoom(size); err != nil {
		return Staged{}, err
	}
	tmp := filepath.Join(b.dir, "upload.raucb")
	sum, size, err := writeBounded(body, tmp, b.cfg.MaxBundleMB<<20, progress)
	if err != nil {
		return Staged{}, err
	}
	return b.stage(ctx, tmp, sum, size, "file")
}

// Check reads the release index (on the manager's tap only) and, when it
// offers another version for this board, downloads its bundle in the
// background; Staged follows it.
func (b *Box) Check(ctx context.Context) (Staged, error) {
	if b.cfg.ReleaseIndexURL == "" {
		return Staged{}, refuse(CodeNoIndex, "update.release_index_url is not set")
	}
	if err := b.notRollingOut(); err != nil {
		return Staged{}, err
	}
	if b.Staged().State == StagedDownloading {
		return b.Staged(), nil
	}
	idx, err := b.readIndex(ctx)
	if err != nil {
		return Staged{}, err
	}
	if idx.Compatible != b.cfg.Compatible {
		return Staged{}, refuse(CodeWrongBoard, "the release index offers %q, this box is %q", idx.Compatible, b.cfg.Compatible)
	}
	if c, ok := Compare(idx.Version, b.version); (ok && c <= 0) || idx.Version == b.version {
		return Staged{}, refuse(CodeCurrent, "the release index offers %s; this box runs %s", idx.Version, b.version)
	}
	if cur := b.Staged(); cur.State == StagedReady && cur.SHA256 == idx.SHA256 {
		return cur, nil
	}
	if idx.Size > b.cfg.MaxBundleMB<<20 {
		return Staged{}, refuse(CodeTooLarge, "the bundle is %d bytes", idx.Size)
	}
	if err := b.checkRoom(idx.Size); err != nil {
		return Staged{}, err
	}
	s := Staged{State: StagedDownloading, Source: "index", Version: idx.Version, Compatible: idx.Compatible, SHA256: idx.SHA256, Size: idx.Size}
	b.setStaged(s)
	go b.download(idx)
	return s, nil
}

func (b *Box) readIndex(ctx context.Context) (ReleaseIndex, error) {
	var idx ReleaseIndex
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.cfg.ReleaseIndexURL, nil)
	if err != nil {
		return idx, refuse(CodeIndexFailed, "%v", err)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return idx, refuse(CodeIndexFailed, "%v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return idx, refuse(CodeIndexFailed, "%s: status %d", b.cfg.ReleaseIndexURL, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&idx); err != nil {
		return idx, refuse(CodeIndexFailed, "not a release index: %v", err)
	}
	if idx.Version == "" || idx.URL == "" || len(idx.SHA256) != 64 || idx.Size <= 0 {
		return idx, refuse(CodeIndexFailed, "the release index lacks version, url, sha256 or size")
	}
	idx.SHA256 = strings.ToLower(idx.SHA256)
	// A relative url is beside the index.
	base, _ := url.Parse(b.cfg.ReleaseIndexURL)
	ref, err := url.Parse(idx.URL)
	if err != nil {
		return idx, refuse(CodeIndexFailed, "bundle url: %v", err)
	}
	idx.URL = base.ResolveReference(ref).String()
	return idx, nil
}

func (b *Box) download(idx ReleaseIndex) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	fail := func(err error) {
		r := reasonOf(err)
		if rr := (*Refusal)(nil); !errors.As(err, &rr) {
			r = Reason{Error: CodeIndexFailed, Detail: err.Error()}
		}
		b.setStaged(Staged{State: StagedFailed, Source: "index", Version: idx.Version, Reason: r})
		b.log.Warn("update: download failed", "url", idx.URL, "error", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, idx.URL, nil)
	if err != nil {
		fail(err)
		return
	}
	resp, err := b.client.Do(req)
	if err != nil {
		fail(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(fmt.Errorf("%s: status %d", idx.URL, resp.StatusCode))
		return
	}
	tmp := filepath.Join(b.dir, "download.raucb")
	sum, size, err := writeBounded(resp.Body, tmp, min(idx.Size, b.cfg.MaxBundleMB<<20), nil)
	if err != nil {
		fail(err)
		return
	}
	if sum != idx.SHA256 || size != idx.Size {
		os.Remove(tmp)
		fail(refuse(CodeCorrupt, "downloaded %d bytes with sha256 %s; the index says %d bytes, %s", size, sum, idx.Size, idx.SHA256))
		return
	}
	if _, err := b.stage(ctx, tmp, sum, size, "index"); err != nil {
		fail(err)
	}
}
