package setup

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/setup/cluster"
)

// "Restore a store from a backup", the wizard's other way to make a
// store, for the day every box of a store is lost:
//
//	POST /setup/api/restore  the backup file's bytes (application/octet-stream) → RestoreUpload
//	POST /setup/api/create   the usual form with "restore": true
//
// The page sends the file the owner picked (a backup downloaded from the
// console's Backups page) to the box it opened; the box keeps it only
// once it is whole and restores in a scratch directory, as `masterorder
// backup` keeps one (node.SaveBackup through package cluster). The form
// then makes the store as a new one is made (a new CA, new secrets, the
// passwords the owner types), with two differences: this box's data
// directory is seeded from the backup before any box is configured, and
// the other boxes are configured to join it (they wait, empty, for this
// box to lead, and receive the store from it as a snapshot) instead of
// starting a store of their own.

// RestoreUpload describes the backup a box holds for a restore.
type RestoreUpload struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	Index  uint64 `json:"index"` // the Raft index the backup holds
}

// maxRestoreUpload bounds a backup sent to a box in setup mode (a year
// of a busy shop is some hundreds of MB).
const maxRestoreUpload = 4 << 30

// restoreUploadTime bounds an upload and its check.
const restoreUploadTime = 15 * time.Minute

func (l Layout) restoreDir() string        { return filepath.Join(l.StateDir, "restore") }
func (l Layout) restoreBackupPath() string { return filepath.Join(l.restoreDir(), "backup.mosnap") }

// skipsBodyLimit: the restore upload bounds its own body.
func skipsBodyLimit(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && c.Request().URL.Path == "/setup/api/restore"
}

func (w *Wizard) handleRestoreUpload(c echo.Context) error {
	w.mu.Lock()
	busy := w.progress.State == JobWorking || w.progress.State == JobDone
	w.mu.Unlock()
	if busy || w.box.Info().State != ModeSetup {
		return httpapi.Fail(c, http.StatusConflict, "SETUP_BUSY")
	}
	req := c.Request()
	if req.ContentLength > maxRestoreUpload {
		return httpapi.Fail(c, http.StatusRequestEntityTooLarge, "BACKUP_TOO_LARGE")
	}
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Now().Add(restoreUploadTime))
	_ = rc.SetWriteDeadline(time.Now().Add(restoreUploadTime))
	l := w.box.opts.Layout
	if err := os.MkdirAll(l.restoreDir(), 0o700); err != nil {
		return httpapi.Fail(c, http.StatusServiceUnavailable, "CARD_WRITE_FAILED")
	}
	body := http.MaxBytesReader(c.Response(), req.Body, maxRestoreUpload)
	file, err := cluster.SaveBackup(l.restoreBackupPath(), body, req.ContentLength, w.box.log)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.restore = nil
		os.Remove(l.restoreBackupPath())
		w.box.log.Warn("setup: the backup sent for a restore was refused", "error", err)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig), errors.Is(err, syscall.ENOSPC):
			return httpapi.Fail(c, http.StatusRequestEntityTooLarge, "BACKUP_TOO_LARGE")
		}
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "BACKUP_INVALID", Detail: err.Error()})
	}
	w.restore = &RestoreUpload{Bytes: file.Bytes, SHA256: file.SHA256, Index: file.Index}
	w.box.log.Info("setup: a backup for a restore arrived", "bytes", file.Bytes, "index", file.Index)
	return c.JSON(http.StatusOK, *w.restore)
}

// restoreSelf seeds this box's data directory from the uploaded backup
// with the config it is about to receive (b, this box's bundle). A box in
// setup mode holds no store: what a restore left there before (a setup
// that failed after it) is removed first, and again on a failure, so the
// data directory is blank whenever the box is not yet a member. The
// upload stays until this box is configured (a failed setup may retry).
func (w *Wizard) restoreSelf(b cluster.Bundle) error {
	l := w.box.opts.Layout
	w.unrestore()
	c := b.Config
	c.UseLayout(l.TLSDir(), l.DataDir())
	if _, err := cluster.RestoreBackup(c, l.restoreBackupPath(), w.box.log); err != nil {
		w.box.log.Error("setup: restore failed", "error", err)
		w.unrestore()
		return err
	}
	return nil
}

// unrestore removes a restored store from a box still in setup mode.
func (w *Wizard) unrestore() {
	if w.box.Info().State == ModeMember {
		return // configured after all: that is its store now
	}
	l := w.box.opts.Layout
	for _, d := range []string{"raft", "fsm"} {
		os.RemoveAll(filepath.Join(l.DataDir(), d))
	}
}

// restored: this box is configured with the restored store; the upload
// is not needed any more.
func (w *Wizard) restored() {
	os.RemoveAll(w.box.opts.Layout.restoreDir())
}
