package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
	// The digest trailer arrives after the body: without it (or with an
	// error trailer) the stream was cut and the file is not a backup.
	// Success means the file restores: both stores at the index the
	// server claimed (node.SaveBackup, the console's rule too).
	claimed, _ := strconv.ParseUint(resp.Header.Get(orders.BackupIndexHeader), 10, 64)
	if claimed == 0 {
		return fmt.Errorf("backup of %s: the server claimed no index (%q)", c.base, resp.Header.Get(orders.BackupIndexHeader))
	}
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, e.stderr)
	file, err := node.SaveBackup(opts, *out, node.BackupSource{R: resp.Body, Index: claimed, Complete: func(digest string) error {
		if msg := resp.Trailer.Get(orders.BackupErrorTrailer); msg != "" {
			return fmt.Errorf("backup failed on the server: %s", msg)
		}
		if want := resp.Trailer.Get(orders.BackupDigestTrailer); want != digest {
			return fmt.Errorf("the server said %q", want)
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("backup of %s: %w", c.base, err)
	}
	index, n, digest := file.Index, file.Bytes, file.SHA256
	fmt.Fprintf(e.stdout, "backup of %s at index %d: %d bytes, sha256 %s, verified: it restores\n", c.base, index, n, digest)
	fmt.Fprintf(e.stdout, "written to %s\n", *out)
	return nil
}
