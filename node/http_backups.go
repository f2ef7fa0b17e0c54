package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
)

// The console's Backups page (manager): one tap makes a verified backup
// file on the box the tablet talks to, and the tablet downloads it.
//
//	POST /api/staff/backups         make it: capture, write, check that it restores → BackupMade
//	GET  /api/staff/backups/{file}  download it (Content-Length, and its SHA-256 in the header X-MasterOrder-Backup-Sha256)
//
// A browser cannot read an HTTP trailer, so GET /api/staff/backup's
// streamed digest is of no use to a page: the box keeps the file
// (SaveBackup, the rule `masterorder backup` keeps a file by), and the
// page compares the digest of what it downloaded with the one answered.
// The box keeps only the newest console backup (its card is small); it
// lives in data_dir/backups, next to the store, and is removed after
// consoleBackupKeep.

// consoleBackupKeep is how long a console backup waits on the box for
// its download.
const consoleBackupKeep = time.Hour

// BackupMade answers POST /api/staff/backups.
type BackupMade struct {
	File    string    `json:"file"` // the name to GET it by
	Bytes   int64     `json:"bytes"`
	SHA256  string    `json:"sha256"`
	Index   uint64    `json:"index"`
	ShopID  string    `json:"shopId"`
	TakenAt time.Time `json:"takenAt"` // the box's clock
}

var consoleBackupName = regexp.MustCompile(`^masterorder-[A-Za-z0-9_-]+-[0-9]+\.mosnap$`)

func (n *Node) consoleBackupDir() string { return filepath.Join(n.cfg.DataDir, "backups") }

func (n *Node) makeBackup(c echo.Context) error {
	// An empty JSON object: the call has no settings yet, and anything
	// else is a client's mistake, refused before any work.
	var none *struct{}
	if err := httpapi.DecodeBody(c, &none); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	if none == nil { // null
		return httpapi.Fail(c, http.StatusBadRequest, "INVALID_REQUEST")
	}
	if !n.backupMu.TryLock() {
		return httpapi.Fail(c, http.StatusConflict, "BACKUP_BUSY")
	}
	defer n.backupMu.Unlock()
	made, err := n.MakeBackupFile(c.Request().Context(), n.consoleBackupDir())
	if err != nil {
		if errors.Is(err, ErrDiskLow) || errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrHalted) {
			return n.FailErr(c, err)
		}
		n.log.Error("console backup failed", "error", err)
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusServiceUnavailable, Code: "BACKUP_FAILED", Detail: err.Error(), RetryAfter: 10 * time.Second})
	}
	// Only the newest waits for its download.
	entries, _ := os.ReadDir(n.consoleBackupDir())
	for _, e := range entries {
		if e.Name() != made.File && consoleBackupName.MatchString(e.Name()) {
			os.Remove(filepath.Join(n.consoleBackupDir(), e.Name()))
		}
	}
	time.AfterFunc(consoleBackupKeep, func() { os.Remove(filepath.Join(n.consoleBackupDir(), made.File)) })
	return c.JSON(http.StatusOK, made)
}

// MakeBackupFile captures the store (after catching up with everything
// committed) into a verified backup file in dir, named for the shop and
// the index it holds.
func (n *Node) MakeBackupFile(ctx context.Context, dir string) (BackupMade, error) {
	snap, err := n.CaptureBackup(ctx)
	if err != nil {
		return BackupMade{}, err
	}
	defer snap.Close()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return BackupMade{}, err
	}
	name := fmt.Sprintf("masterorder-%s-%d.mosnap", n.cfg.ShopID, snap.Index)
	pr, pw := io.Pipe()
	go func() { _, err := snap.WriteTo(pw); pw.CloseWithError(err) }()
	file, err := SaveBackup(n.opts, filepath.Join(dir, name), BackupSource{R: pr, Index: snap.Index})
	pr.Close()
	if err != nil {
		return BackupMade{}, err
	}
	return BackupMade{File: name, Bytes: file.Bytes, SHA256: file.SHA256, Index: file.Index, ShopID: n.cfg.ShopID, TakenAt: time.Now().UTC()}, nil
}

func (n *Node) downloadBackup(c echo.Context) error {
	name := c.Param("file")
	if !consoleBackupName.MatchString(name) {
		return httpapi.Fail(c, http.StatusNotFound, "BACKUP_NOT_FOUND")
	}
	f, err := os.Open(filepath.Join(n.consoleBackupDir(), name))
	if err != nil {
		return httpapi.Fail(c, http.StatusNotFound, "BACKUP_NOT_FOUND")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return n.FailErr(c, err)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return n.FailErr(c, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return n.FailErr(c, err)
	}
	h := c.Response().Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	h.Set("Cache-Control", "no-store")
	h.Set(BackupDigestTrailer, hex.EncodeToString(sum.Sum(nil)))
	h.Set(BackupIndexHeader, strings.TrimSuffix(name[strings.LastIndexByte(name, '-')+1:], ".mosnap"))
	c.Response().WriteHeader(http.StatusOK)
	sw := &streamWriter{w: c.Response(), rc: http.NewResponseController(c.Response())}
	stop := context.AfterFunc(n.ctx, sw.cut)
	defer stop()
	if _, err := io.Copy(sw, f); err != nil {
		n.log.Warn("backup download cut", "file", name, "error", err)
	}
	return nil
}
