package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/pelletier/go-toml/v2"

	"masterorder/kv"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
	"masterorder/raftfsm"
)

// snapshotAt returns a snapshot of a replica that applied entries 1..n.
func snapshotAt(t *testing.T, n uint64) []byte {
	t.Helper()
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg, Migrate: orders.NodeOptions().Migrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := uint64(1); i <= n; i++ {
		p, _ := json.Marshal(map[string]any{"op": "setIfAbsent", "key": fmt.Sprintf("k%d", i), "value": []byte("v"), "ttlMs": 0})
		cmd := raftfsm.Command{Type: kv.CmdOp, Version: 1, FSMTime: int64(1000 + i), Payload: p}
		if r := f.Apply(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}).(raftfsm.Response); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var b bytes.Buffer
	if err := f.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fakeBackupServer answers the staff login and one backup: body, the index
// it claims, and a correct digest trailer.
func fakeBackupServer(t *testing.T, body []byte, index uint64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/staff/login":
			w.Write([]byte(`{"token":"t"}`))
		case "/api/staff/backup":
			w.Header().Set(orders.BackupIndexHeader, strconv.FormatUint(index, 10))
			w.Header().Set("Trailer", orders.BackupDigestTrailer)
			w.Write(body)
			sum := sha256.Sum256(body)
			w.Header().Set(orders.BackupDigestTrailer, hex.EncodeToString(sum[:]))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// `masterorder backup` reports success only for a file that restores with
// both stores at the index the server claimed; a complete download with a
// good digest is not enough.
func TestBackupCLIVerifiesTheFileRestores(t *testing.T) {
	at10, at15 := snapshotAt(t, 10), snapshotAt(t, 15)
	// bbolt of the replica at 10, SQLite of the one at 15: what a backup
	// taken across two batches looked like.
	boltEnd := func(b []byte) int { return 16 + int(binary.BigEndian.Uint64(b[8:16])) }
	torn := append(append([]byte{}, at10[:boltEnd(at10)]...), at15[boltEnd(at15):]...)
	for _, tc := range []struct {
		name  string
		body  []byte
		index uint64
		want  string // "" = success
	}{
		{"good", at15, 15, ""},
		{"stores at two indexes", torn, 10, "disagree"},
		{"index not the claimed one", at10, 15, "claimed"},
		{"not a snapshot", []byte("hello"), 3, "does not restore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.mosnap")
			code, stdout, stderr := runCLI(t, "backup", "--url", fakeBackupServer(t, tc.body, tc.index), "--out", out, "--password", "x")
			_, statErr := os.Stat(out)
			if tc.want == "" {
				if code != 0 || statErr != nil || !strings.Contains(stdout, "verified") {
					t.Fatalf("good backup: exit %d, file %v, %s %s", code, statErr, stdout, stderr)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, tc.want)
			}
			if statErr == nil {
				t.Fatal("a backup that does not restore was kept")
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 0 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
}

func TestBackupRestoreCLI(t *testing.T) {
	c, svcs := cliStore(t, 3)
	li, _ := c.WaitLeader(10 * time.Second)
	ctx := context.Background()
	sessionID, _, err := svcs[li].SeedDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "store.mosnap")
	url := "http://" + c.Configs[(li+1)%3].HTTPAddr
	if code, _, _ := runCLI(t, "backup", "--url", url); code != 2 {
		t.Errorf("backup without --out: exit %d", code)
	}
	code, out, errs := runCLI(t, "backup", "--url", url, "--out", file, "--password", cliPassword)
	if code != 0 || !strings.Contains(out, "sha256") {
		t.Fatalf("backup: %d %s %s", code, out, errs)
	}

	cfgPath := restoreFresh(t, file, dir, nil)
	if code, _, errs := runCLI(t, "restore", "--in", file, "--config", cfgPath); code != 1 || !strings.Contains(errs, "fresh data_dir") {
		t.Fatalf("restore into a used data dir: %d %s", code, errs)
	}
	cl := startRestored(t, cfgPath)
	var menu struct{ Items []json.RawMessage }
	if err := cl.call(ctx, http.MethodGet, "/api/staff/menu", nil, &menu); err != nil || len(menu.Items) != 13 { // the demo menu (orders/demo.go)
		t.Fatalf("restored menu: %v, %d items", err, len(menu.Items))
	}
	var sessions struct{ Sessions []struct{ SessionID string } }
	if err := cl.call(ctx, http.MethodGet, "/api/staff/sessions?status=ACTIVE", nil, &sessions); err != nil || len(sessions.Sessions) != 1 || sessions.Sessions[0].SessionID != sessionID {
		t.Fatalf("restored sessions: %v %+v", err, sessions)
	}
}

// restoreFresh restores a backup file into a fresh single box's data
// directory, its config written in dir as init writes it (changed by
// mutate), and returns the config's path.
func restoreFresh(t *testing.T, file, dir string, mutate func(c *orders.FileConfig)) string {
	t.Helper()
	cfg := orders.FileConfig{NodeConfig: nodetest.Configs(t, 1, dir)[0], Config: orderstest.Domain()}
	cfg.Staff.PasswordHash = orderstest.PasswordHash(t, cliPassword) // as cliStore's nodes
	cfg.Demo = false
	if mutate != nil {
		mutate(&cfg)
	}
	raw, err := toml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "a.toml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "restore", "--in", file, "--config", cfgPath); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: %d %s %s", code, out, errs)
	}
	return cfgPath
}

// startRestored starts the box of cfgPath and logs in as the manager; the
// box stops when the test ends.
func startRestored(t *testing.T, cfgPath string) *opsClient {
	t.Helper()
	loaded, err := orders.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := startStore(context.Background(), loaded, nodetest.Logger(), orders.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	waitFor(t, "the restored box ready", n.Ready)
	cl, err := staffClient(context.Background(), "http://"+loaded.HTTPAddr, cliPassword)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
