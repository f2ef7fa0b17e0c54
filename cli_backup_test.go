package main

import (
	"bytes"
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

	"github.com/hashicorp/raft"

	"masterorder/kv"
	"masterorder/orders"
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
