package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"masterorder/orders"
	"masterorder/orders/cloudsync/emulatortest"
	"masterorder/orders/orderstest"
)

// The Cloud page's key is in a backup only sealed: the file `masterorder
// backup` writes holds the setting but no piece of the key, and a box
// restored from it under other secrets (another store) cannot open it
// and says so on the page.
func TestBackupHoldsTheCloudKeySealed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := l.Addr().String() // no Firestore answers: the key is saved unconfirmed
	l.Close()
	hash := orderstest.PasswordHash(t, cliPassword)
	st := orderstest.Start(t, 3, func(_ int, c *orders.FileConfig) {
		c.Staff.PasswordHash = hash
		c.Firestore.EmulatorHost = nobody
	}, nil, orders.Options{})
	url := "http://" + st.Configs[1].HTTPAddr
	ctx := context.Background()
	cl, err := staffClient(ctx, url, cliPassword)
	if err != nil {
		t.Fatal(err)
	}
	key := emulatortest.ServiceAccountKey(t, "demo-backup", "sync@demo-backup.iam.gserviceaccount.com")
	var page struct{ Source, State, Checked, LastError string }
	if err := cl.call(ctx, http.MethodPut, "/api/staff/cloud", map[string]string{"keyFile": string(key)}, &page); err != nil || page.Checked != "unconfirmed" {
		t.Fatalf("PUT the key: %v %+v", err, page)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "store.mosnap")
	mustRun(t, "backup", "--url", url, "--out", file, "--password", cliPassword)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("cloudsync:setting")) {
		t.Fatalf("the backup (%d bytes) holds no cloud setting", len(b))
	}
	for _, p := range emulatortest.KeyPieces(t, key) {
		if bytes.Contains(b, []byte(p)) {
			t.Fatal("the backup holds the key in plain text")
		}
	}

	// Restored into a box of another store: other secrets.
	other := startRestored(t, restoreFresh(t, file, dir, func(c *orders.FileConfig) { c.Staff.TokenSecret = strings.Repeat("fedcba9876543210", 4) }))
	waitFor(t, "the restored box's page: keyUnreadable", func() bool {
		err := other.call(ctx, http.MethodGet, "/api/staff/cloud", nil, &page)
		return err == nil && page.State == "keyUnreadable" && strings.Contains(page.LastError, "choose the key file again")
	})
}
