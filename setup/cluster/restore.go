package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"masterorder/node"
	"masterorder/orders"
)

// A store restored from a backup onto blank boxes (the wizard's "Restore
// a store from a backup"): the backup is checked as `masterorder backup`
// checks one (node.SaveBackup) when it arrives, and restored into the
// data directory of the first box (node.RestoreBackup) before that box
// starts; the other boxes join it and receive the store from it.

// BackupFile describes a kept backup file.
type BackupFile = node.BackupFile

// SaveBackup keeps a backup read from r at path once it is whole (size
// bytes; -1: unknown) and restores in a scratch directory next to it.
func SaveBackup(path string, r io.Reader, size int64, log *slog.Logger) (BackupFile, error) {
	opts := orders.NodeOptions()
	opts.Logger = log
	src := node.BackupSource{R: r}
	if size >= 0 {
		counted := &countingReader{r: r}
		src.R = counted
		src.Complete = func(string) error {
			if counted.n != size {
				return fmt.Errorf("%d of %d bytes arrived", counted.n, size)
			}
			return nil
		}
	}
	return node.SaveBackup(opts, path, src)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// RestoreBackup seeds the data directory of the box cfg describes (its
// layout applied: Config.UseLayout) from the backup at path, with cfg's
// peers as the voters of the restored store.
func RestoreBackup(cfg Config, path string, log *slog.Logger) (node.RestoreInfo, error) {
	raw, err := cfg.Marshal("")
	if err != nil {
		return node.RestoreInfo{}, err
	}
	fc, err := orders.ParseConfig(raw)
	if err != nil {
		return node.RestoreInfo{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return node.RestoreInfo{}, err
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = log
	return node.RestoreBackup(fc.NodeConfig, opts, f)
}
