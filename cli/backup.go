package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"masterorder/node"
	"masterorder/orders"
)

// backup: a running store's files, verified before they are kept.
var backupCommand = command{
	name:  "backup",
	usage: "masterorder backup --url URL --out FILE [--password PW]\n",
	run:   backup,
}

func backup(ctx context.Context, args []string, e env) error {
	fs := e.flags("backup")
	url := fs.String("url", "", "any member's base URL")
	out := fs.String("out", "", "backup file to write")
	password := fs.String("password", "", "staff password (default $"+passwordEnv+")")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *url == "" || *out == "" {
		return badUsage("backup needs --url and --out")
	}
	c, err := staffClient(ctx, *url, *password)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/staff/backup", nil)
	if err != nil {
		return badFlag("--url", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept-Language", "en")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("backup from %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("backup from %s: status %d: %s", c.base, resp.StatusCode, bytes.TrimSpace(data))
	}
	tmp := *out + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), resp.Body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup download: %w", err)
	}
	// The digest trailer arrives after the body: without it (or with an
	// error trailer) the stream was cut and the file is not a backup.
	if msg := resp.Trailer.Get(orders.BackupErrorTrailer); msg != "" {
		return fmt.Errorf("backup failed on the server: %s", msg)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if want := resp.Trailer.Get(orders.BackupDigestTrailer); want != digest {
		return fmt.Errorf("backup incomplete: %d bytes, digest %s, server said %q", n, digest, want)
	}
	// Success means the file restores: both stores at the index the
	// server claimed.
	index, err := verifyBackupFile(tmp, e.stderr)
	if err != nil {
		return fmt.Errorf("backup of %s does not restore: %w", c.base, err)
	}
	if claimed := resp.Header.Get(orders.BackupIndexHeader); claimed != strconv.FormatUint(index, 10) {
		return fmt.Errorf("backup of %s holds index %d, the server claimed %q", c.base, index, claimed)
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backup of %s at index %d: %d bytes, sha256 %s, verified: it restores\n", c.base, index, n, digest)
	fmt.Fprintf(e.stdout, "written to %s\n", *out)
	return nil
}

func verifyBackupFile(path string, stderr io.Writer) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, stderr)
	return node.VerifyBackup(opts, filepath.Dir(path), f)
}
