// Package atomicfile writes a box's small files (its config, TLS files,
// setup identity and claim marker) so that a reader, a crash or a power
// cut finds either the old file or the whole new one, never a torn one,
// and never a stray temporary file.
//
// It is the one writer of such files: init, the setup wizard's push and
// node/pki all use it. The Raft log and the store have writers of their
// own (bbolt, SQLite, raft's snapshot store).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile replaces path with data: into a new temporary file of a
// unique name in path's directory, given mode before any byte is written
// (a key is never readable by others, even briefly), fsynced, renamed
// over path, then the directory fsynced so the new name survives a power
// cut. On any failure the temporary file is removed and path is left as
// it was (or, when only the directory's fsync failed, already replaced).
func WriteFile(path string, data []byte, mode os.FileMode) error {
	if err := write(path, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func write(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, making the names in it durable: a file's
// own fsync keeps its contents, not its name.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll makes dir and any missing parents with mode, and fsyncs the
// directory holding each one it made, so a directory made for a file
// survives a power cut with it.
func MkdirAll(dir string, mode os.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, mode); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(parent)
}
