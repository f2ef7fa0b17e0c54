package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A verified backup file: what `masterorder backup` keeps on the laptop,
// what the console's Backups page hands the tablet, and what setup's
// restore takes from the owner's phone. One rule for all three: a file is
// kept only once its bytes arrived whole and it restores, in a scratch
// directory, at the index its source claimed.

// BackupFile is a backup kept on disk.
type BackupFile struct {
	Path   string
	Bytes  int64
	SHA256 string // hex
	Index  uint64 // the Raft index it holds
}

// BackupSource is a backup stream and how to tell whether it ended whole.
type BackupSource struct {
	R io.Reader
	// Complete, called once R is read to its end with the digest of what
	// was read, says whether the stream was whole (an HTTP download's
	// trailers; a local capture's write error). Nil: trusted as whole.
	Complete func(sha256hex string) error
	// Index is the index the source claimed the backup holds (0: any).
	Index uint64
}

// ErrBackupIncomplete: the stream was cut or its digest does not match.
var ErrBackupIncomplete = errors.New("backup incomplete")

// SaveBackup writes src to path through path+".partial", synced, and
// keeps it only when it is complete and restores (VerifyBackup, in a
// scratch directory next to path) at the index src claimed; otherwise
// nothing is left at path.
func SaveBackup(opts Options, path string, src BackupSource) (BackupFile, error) {
	out := BackupFile{Path: path}
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return out, err
	}
	defer os.Remove(tmp)
	sum := sha256.New()
	out.Bytes, err = io.Copy(io.MultiWriter(f, sum), src.R)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return out, fmt.Errorf("backup download: %w", err)
	}
	out.SHA256 = hex.EncodeToString(sum.Sum(nil))
	if src.Complete != nil {
		if err := src.Complete(out.SHA256); err != nil {
			return out, fmt.Errorf("%w: %d bytes, digest %s: %v", ErrBackupIncomplete, out.Bytes, out.SHA256, err)
		}
	}
	if out.Index, err = verifyBackupFile(opts, tmp); err != nil {
		return out, fmt.Errorf("backup does not restore: %w", err)
	}
	if src.Index != 0 && src.Index != out.Index {
		return out, fmt.Errorf("backup holds index %d, its source claimed %d", out.Index, src.Index)
	}
	if err := os.Rename(tmp, path); err != nil {
		return out, err
	}
	if err := syncDirs(filepath.Dir(path)); err != nil {
		return out, err
	}
	return out, nil
}

// VerifyBackupFile checks a backup file like SaveBackup does (it
// restores, in a scratch directory next to it) and describes it.
func VerifyBackupFile(opts Options, path string) (BackupFile, error) {
	out := BackupFile{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	sum := sha256.New()
	if out.Bytes, err = io.Copy(sum, f); err != nil {
		return out, err
	}
	out.SHA256 = hex.EncodeToString(sum.Sum(nil))
	out.Index, err = verifyBackupFile(opts, path)
	return out, err
}

func verifyBackupFile(opts Options, path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return VerifyBackup(opts, filepath.Dir(path), f)
}
