package powercut

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"
)

func write(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	writeFile(t, path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600, data, sync)
}

func appendTo(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	writeFile(t, path, os.O_WRONLY|os.O_APPEND, 0, data, sync)
}

// writeFile writes data to the file opened with flag, fsyncs it if sync,
// and closes it.
func writeFile(t *testing.T, path string, flag int, perm os.FileMode, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync dir %s: %v", dir, err)
	}
}

func read(t *testing.T, path string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func crash(t *testing.T, p *FS, o CrashOptions) {
	t.Helper()
	if err := p.Crash(o); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); len(s.UndoErrors) > 0 {
		t.Fatalf("undo errors: %v", s.UndoErrors)
	}
}

// durableFile creates name with data, fsynced, its entry made durable.
func durableFile(t *testing.T, p *FS, name string, data []byte) string {
	path := filepath.Join(p.Mountpoint(), name)
	write(t, path, data, true)
	syncDir(t, filepath.Dir(path))
	return path
}

func TestUnsyncedContentsAreLost(t *testing.T) {
	p := MountT(t)
	base := bytes.Repeat([]byte("a"), 10000)
	path := durableFile(t, p, "f", base)
	// Overwrite inside, and grow past the synced size.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("XXXX"), 5000)
	f.WriteAt(bytes.Repeat([]byte("b"), 9000), 9000)
	f.Close()
	if got, _ := read(t, path); len(got) != 18000 || got[5000] != 'X' {
		t.Fatalf("before the crash the writes must be visible: len %d", len(got))
	}
	crash(t, p, CrashOptions{})
	if got, _ := read(t, path); !bytes.Equal(got, base) {
		t.Fatalf("after the crash: %d bytes, want the synced %d", len(got), len(base))
	}
}

func TestSyncedContentsSurvive(t *testing.T) {
	p := MountT(t)
	path := durableFile(t, p, "f", []byte("one"))
	appendTo(t, path, []byte(" two"), true)
	appendTo(t, path, []byte(" three"), false)
	crash(t, p, CrashOptions{})
	if got, _ := read(t, path); string(got) != "one two" {
		t.Fatalf("got %q, want %q", got, "one two")
	}
}

func TestTruncateIsRolledBack(t *testing.T) {
	p := MountT(t)
	data := bytes.Repeat([]byte("z"), 3*pageSize+100)
	path := durableFile(t, p, "f", data)
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	write(t, path, []byte("new"), false) // O_TRUNC too
	crash(t, p, CrashOptions{})
	if got, _ := read(t, path); !bytes.Equal(got, data) {
		t.Fatalf("after the crash %d bytes, want %d", len(got), len(data))
	}
}

func TestNewFileNeedsItsDirectorySynced(t *testing.T) {
	p := MountT(t)
	dir := filepath.Join(p.Mountpoint(), "d")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	syncDir(t, p.Mountpoint())
	write(t, filepath.Join(dir, "synced-file-only"), []byte("x"), true)
	write(t, filepath.Join(dir, "kept"), []byte("y"), true)
	syncDir(t, dir)
	write(t, filepath.Join(dir, "after-dir-sync"), []byte("z"), true)
	os.Mkdir(filepath.Join(p.Mountpoint(), "newdir"), 0o750)
	crash(t, p, CrashOptions{})
	if got, ok := read(t, filepath.Join(dir, "kept")); !ok || string(got) != "y" {
		t.Fatalf("kept: %q %v", got, ok)
	}
	if _, ok := read(t, filepath.Join(dir, "synced-file-only")); !ok {
		t.Fatal("a file created before its directory was fsynced must survive")
	}
	if _, ok := read(t, filepath.Join(dir, "after-dir-sync")); ok {
		t.Fatal("a file created after the last fsync of its directory survived")
	}
	if _, err := os.Stat(filepath.Join(p.Mountpoint(), "newdir")); !os.IsNotExist(err) {
		t.Fatalf("unsynced mkdir survived: %v", err)
	}
}

func TestRenameAndUnlinkAreUndoneUntilDirSync(t *testing.T) {
	p := MountT(t)
	mnt := p.Mountpoint()
	a := durableFile(t, p, "a", []byte("A"))
	b := durableFile(t, p, "b", []byte("B"))
	c := durableFile(t, p, "c", []byte("C"))
	// a replaces b, c is removed: all undone by the crash.
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c); err != nil {
		t.Fatal(err)
	}
	crash(t, p, CrashOptions{})
	for name, want := range map[string]string{"a": "A", "b": "B", "c": "C"} {
		if got, ok := read(t, filepath.Join(mnt, name)); !ok || string(got) != want {
			t.Errorf("%s after the crash: %q %v, want %q", name, got, ok, want)
		}
	}
	// The same, then the directory fsynced: durable.
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	crash(t, p, CrashOptions{})
	if _, ok := read(t, a); ok {
		t.Error("a still there after a durable rename")
	}
	if got, _ := read(t, b); string(got) != "A" {
		t.Errorf("b = %q, want A", got)
	}
	if _, ok := read(t, c); ok {
		t.Error("c still there after a durable unlink")
	}
}

// A rename into place of a directory whose files' entries were never
// made durable: the directory moves, its files do not survive (the case
// the node's snapshot store must fsync for).
func TestRenamedDirectoryKeepsOnlyDurableEntries(t *testing.T) {
	p := MountT(t)
	mnt := p.Mountpoint()
	tmp := filepath.Join(mnt, "snap.tmp")
	os.Mkdir(tmp, 0o750)
	write(t, filepath.Join(tmp, "state.bin"), []byte("state"), true)
	final := filepath.Join(mnt, "snap")
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	crash(t, p, CrashOptions{})
	if _, err := os.Stat(final); err != nil {
		t.Fatalf("the renamed directory must survive (its parent was fsynced): %v", err)
	}
	if _, ok := read(t, filepath.Join(final, "state.bin")); ok {
		t.Fatal("state.bin survived though its directory was never fsynced")
	}
	// With the directory fsynced after the rename, it survives.
	write(t, filepath.Join(final, "state.bin"), []byte("state"), true)
	syncDir(t, final)
	crash(t, p, CrashOptions{})
	if got, _ := read(t, filepath.Join(final, "state.bin")); string(got) != "state" {
		t.Fatalf("state.bin = %q", got)
	}
}

func TestTornLastPage(t *testing.T) {
	p := MountT(t)
	base := bytes.Repeat([]byte("o"), pageSize)
	path := durableFile(t, p, "f", base)
	appendTo(t, path, bytes.Repeat([]byte("n"), 2*pageSize), false)
	crash(t, p, CrashOptions{TearLastPage: true, TearBytes: 100})
	got, _ := read(t, path)
	want := append(append([]byte{}, base...), bytes.Repeat([]byte("n"), 100)...)
	want = append(want[:pageSize], make([]byte, pageSize)...)
	want = append(want, bytes.Repeat([]byte("n"), 100)...)
	// The first unsynced page is lost, the last one is torn: the file ends
	// 100 bytes into its third page (the second reads as zeros).
	if !bytes.Equal(got, want) {
		t.Fatalf("torn file: %d bytes (want %d)", len(got), len(want))
	}
	if s := p.Stats(); s.TornPages != 1 {
		t.Fatalf("torn pages %d", s.TornPages)
	}
}

// Databases on the mount: what they fsync survives a cut, what they do
// not is gone, and they open again afterwards. They run in a child
// process, as the nodes do: a page fault on a mapping of this mount, taken
// in the process that serves it, can stall the Go runtime that must
// answer it.
func TestDatabasesOnTheMount(t *testing.T) {
	p := MountT(t)
	mnt := p.Mountpoint()
	child := func(step string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestDatabaseChild$", "-test.v")
		cmd.Env = append(os.Environ(), "POWERCUT_CHILD="+step, "POWERCUT_DIR="+mnt)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child %s: %v\n%s", step, err, out)
		}
	}
	child("write")
	crash(t, p, CrashOptions{TearLastPage: true})
	child("check")
}

func TestDatabaseChild(t *testing.T) {
	step, mnt := os.Getenv("POWERCUT_CHILD"), os.Getenv("POWERCUT_DIR")
	if step == "" {
		t.Skip("run by TestDatabasesOnTheMount")
	}
	bpath := filepath.Join(mnt, "x.bolt")
	spath := filepath.Join(mnt, "x.sqlite")
	if step == "write" {
		db, err := bolt.Open(bpath, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		syncDir(t, mnt) // bolt does not fsync its directory
		put := func(db *bolt.DB, k string) {
			if err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				return b.Put([]byte(k), bytes.Repeat([]byte("v"), 3000))
			}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 {
			put(db, fmt.Sprintf("k%03d", i))
		}
		db.Close()
		nosync, err := bolt.Open(bpath, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true})
		if err != nil {
			t.Fatal(err)
		}
		put(nosync, "unsynced")
		nosync.Close()

		sdb, err := sql.Open("sqlite", "file:"+spath+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sdb.Exec(`CREATE TABLE t (v TEXT)`); err != nil {
			t.Fatal(err)
		}
		syncDir(t, mnt)
		for range 50 {
			if _, err := sdb.Exec(`INSERT INTO t VALUES (?)`, string(bytes.Repeat([]byte("r"), 500))); err != nil {
				t.Fatal(err)
			}
		}
		// Not closed: a clean close would checkpoint the WAL.
		return
	}
	db, err := bolt.Open(bpath, 0o600, nil)
	if err != nil {
		t.Fatalf("bolt after the crash: %v", err)
	}
	var n int
	unsynced := false
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		n = b.Stats().KeyN
		unsynced = b.Get([]byte("unsynced")) != nil
		return nil
	})
	db.Close()
	if n != 200 || unsynced {
		t.Fatalf("bolt after the crash: %d keys (want 200), unsynced write present %v", n, unsynced)
	}
	sdb, err := sql.Open("sqlite", "file:"+spath)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var rows int
	var check string
	if err := sdb.QueryRow(`SELECT count(*) FROM t`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	sdb.QueryRow(`PRAGMA quick_check`).Scan(&check)
	if rows != 50 || check != "ok" {
		t.Fatalf("sqlite after the crash: %d rows (want 50), quick_check %q", rows, check)
	}
}

// A directory removed with its files (a snapshot reaped): once the removal
// of the directory is durable, the unsynced removals inside it are moot.
func TestDurablyRemovedDirectory(t *testing.T) {
	p := MountT(t)
	mnt := p.Mountpoint()
	dir := filepath.Join(mnt, "old")
	os.Mkdir(dir, 0o750)
	write(t, filepath.Join(dir, "meta.json"), []byte("m"), true)
	syncDir(t, dir)
	syncDir(t, mnt)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	crash(t, p, CrashOptions{})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("durably removed directory is back: %v", err)
	}
	// Not durable: the directory and its file come back.
	os.Mkdir(dir, 0o750)
	write(t, filepath.Join(dir, "meta.json"), []byte("m"), true)
	syncDir(t, dir)
	syncDir(t, mnt)
	os.RemoveAll(dir)
	crash(t, p, CrashOptions{})
	if got, _ := read(t, filepath.Join(dir, "meta.json")); string(got) != "m" {
		t.Fatalf("meta.json = %q after undoing the removal", got)
	}
}

// A file written after its name is gone (still open) is tracked through
// its handle; the unlink is undone and the write rolled back.
func TestWriteAfterUnlink(t *testing.T) {
	p := MountT(t)
	path := durableFile(t, p, "f", []byte("durable"))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("GONE"), 0); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	f.Close()
	crash(t, p, CrashOptions{})
	if got, _ := read(t, path); string(got) != "durable" {
		t.Fatalf("got %q", got)
	}
}

// A delayed fsync waits at least its delay; fdatasync too; writes and
// directory fsyncs do not.
func TestFsyncDelay(t *testing.T) {
	p := MountT(t)
	path := filepath.Join(p.Mountpoint(), "slow")
	p.SetFsyncDelay(ConstantDelay(150 * time.Millisecond))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, sync := range []func() error{f.Sync, func() error { return syscall.Fdatasync(int(f.Fd())) }} {
		start := time.Now()
		if err := sync(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Fatalf("a delayed fsync returned after %v", took)
		}
	}
	p.SetFsyncDelay(SpikeDelay(0, time.Hour, 0))
	start := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("an fsync without a spike took %v", took)
	}
}
