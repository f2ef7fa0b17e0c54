package boltcheck_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"masterorder/raftfsm/boltcheck"
)

// soundFile writes a bbolt file with what the walker must follow: many
// keys (branch pages), large values (overflow pages), nested buckets
// stored on pages of their own, and small inline buckets.
func soundFile(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sound.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucket([]byte("top"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := top.Put(fmt.Appendf(nil, "key-%05d", i), bytes.Repeat([]byte{'v'}, 40)); err != nil {
				return err
			}
		}
		if err := top.Put([]byte("big"), bytes.Repeat([]byte{'b'}, 3*4096)); err != nil {
			return err
		}
		nested, err := top.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		for i := range 500 {
			if err := nested.Put(fmt.Appendf(nil, "n-%04d", i), []byte("value")); err != nil {
				return err
			}
		}
		inline, err := top.CreateBucket([]byte("inline"))
		if err != nil {
			return err
		}
		return inline.Put([]byte("k"), []byte("v"))
	})
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSoundFilesPass(t *testing.T) {
	if err := boltcheck.Check(nil); err != nil {
		t.Errorf("an empty file (bbolt initializes it): %v", err)
	}
	if err := boltcheck.Check(soundFile(t)); err != nil {
		t.Errorf("a sound file: %v", err)
	}
}

func TestDamageIsNamed(t *testing.T) {
	sound := soundFile(t)
	const ps = 4096 // bbolt's page size on the machines the tests run on
	if binary.LittleEndian.Uint32(sound[16+8:]) != ps {
		t.Skip("page size is not 4096 here")
	}
	damage := map[string]struct {
		change func([]byte) []byte
		want   string
	}{
		"cut short": {func(b []byte) []byte { return b[:len(b)/3] }, "cut short"},
		"meta pages zeroed": {func(b []byte) []byte {
			clear(b[:2*ps])
			return b
		}, "no valid meta page"},
		"a page's id overwritten": {func(b []byte) []byte {
			for id := uint64(2); int(id+1)*ps <= len(b); id++ {
				if b[int(id)*ps+8] == 0x01 { // the first branch page
					binary.LittleEndian.PutUint64(b[int(id)*ps:], id+1000)
					return b
				}
			}
			t.Fatal("no branch page in the sound file")
			return nil
		}, "says it is page"},
		"a page of an unknown type": {func(b []byte) []byte {
			for id := uint64(2); int(id+1)*ps <= len(b); id++ {
				if b[int(id)*ps+8] == 0x02 && binary.LittleEndian.Uint16(b[int(id)*ps+10:]) > 0 {
					b[int(id)*ps+8] = 0x40
					return b
				}
			}
			t.Fatal("no leaf page in the sound file")
			return nil
		}, "has type"},
	}
	for name, d := range damage {
		t.Run(name, func(t *testing.T) {
			err := boltcheck.Check(d.change(bytes.Clone(sound)))
			if err == nil || !strings.Contains(err.Error(), d.want) {
				t.Fatalf("Check = %v, want an error saying %q", err, d.want)
			}
		})
	}
}

// FuzzCheck: whatever the bytes, Check answers (never panics, never
// loops); a run is `go test -fuzz FuzzCheck ./raftfsm/boltcheck`.
func FuzzCheck(f *testing.F) {
	sound := soundFile(f)
	f.Add(sound)
	f.Add(sound[:len(sound)/2])
	f.Add(sound[:2*4096+100])
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = boltcheck.Check(data)
	})
}
