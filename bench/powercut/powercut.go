// Package powercut is a test-only FUSE filesystem that loses what a power
// cut loses. It is a loopback of a backing directory: every operation goes
// through to the backing files at once (reads see everything written, as
// with a page cache), and everything not yet made durable is remembered so
// that Crash can take it back, as LazyFS does:
//
//   - file contents written (or truncated) since the file's last fsync:
//     Crash restores the pages as they were at that fsync and the size;
//   - directory entries created, removed or renamed since their
//     directory's last fsync: Crash undoes them, newest first (a removed
//     or replaced file is kept in a trash directory until then);
//   - optionally the last page written before the cut is torn: it keeps
//     only the first part of what was written to it.
//
// A file's fsync makes its contents durable, not its name: as POSIX
// specifies and as a filesystem that reorders metadata would behave, a new
// file survives a crash only once its directory was fsynced too.
//
// Crash needs every file on the mount closed (the processes using it
// killed first): it unmounts, rolls back and mounts again, so no kernel
// cache keeps what the cut took. The programs using the mount must run in
// other processes: a page fault on a mapped file of the mount (bbolt,
// SQLite's shared memory) taken by the process serving it can stall the
// Go runtime that has to answer it.
package powercut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is the unit of saved contents and of a torn write.
const pageSize = 4096

// FS is one mounted power-cut filesystem.
type FS struct {
	backing, mountpoint, trash string
	rootIno                    uint64 // the backing root's inode (FUSE calls it 1)

	mu     sync.Mutex
	server *fuse.Server
	files  map[uint64]*fileState // by backing inode number
	ops    []*nsOp               // namespace changes not yet durable, oldest first
	trashN int
	last   *lastWrite // the newest write since its file's last fsync
	stats  Stats

	// fsyncDelay, when set, is how long each fsync/fdatasync of a file
	// waits before it runs (a worn SD card stalling; SetFsyncDelay).
	fsyncDelay atomic.Pointer[DelayFunc]
}

// DelayFunc draws the delay of one fsync; it is called concurrently.
type DelayFunc func() time.Duration

// SetFsyncDelay makes every fsync and fdatasync of a file wait d() before
// it runs (nil: no delay). Directory fsyncs are not delayed.
func (p *FS) SetFsyncDelay(d DelayFunc) {
	if d == nil {
		p.fsyncDelay.Store(nil)
		return
	}
	p.fsyncDelay.Store(&d)
}

// ConstantDelay delays every fsync by d.
func ConstantDelay(d time.Duration) DelayFunc { return func() time.Duration { return d } }

// SpikeDelay delays an fsync by spike with probability p, else by base:
// a card that mostly keeps up and now and then stalls while it
// wear-levels.
func SpikeDelay(base, spike time.Duration, p float64) DelayFunc {
	return func() time.Duration {
		if rand.Float64() < p {
			return spike
		}
		return base
	}
}

// Stats count what the filesystem saw and what Crash took back.
type Stats struct {
	Fsyncs, DirFsyncs     int
	Crashes               int
	DroppedPages          int // pages restored to their synced contents
	DroppedBytes          int64
	UndoneEntries         int // namespace changes undone
	TornPages             int
	UndoErrors            []string
	SyncedFiles, OpenedFD int
}

type lastWrite struct {
	ino  uint64
	page int64
}

// fileState is what one file had at its last fsync, for the pages changed
// since.
type fileState struct {
	fd          *os.File // the backing file, whatever its name is now
	durableSize int64
	saved       map[int64][]byte // page → contents at the last fsync
}

type opKind int

const (
	opCreate opKind = iota // name created in dir (file or directory)
	opRemove               // name removed from dir, kept as trash
	opRename               // name moved from dir to newDir (replaced kept as trash)
)

// nsOp is one namespace change; directories are named by inode number and
// found again at undo time (a parent may have been renamed since).
type nsOp struct {
	kind            opKind
	dir, newDir     uint64
	name, newName   string
	ino             uint64 // the entry's inode
	trash, replaced string // trash names (remove; rename over an existing entry)
	isDir           bool   // a removed directory
	pending         map[uint64]bool
}

// Mount mounts a power-cut view of backing on mountpoint (both must
// exist). The trash lives beside backing, on the same filesystem.
func Mount(backing, mountpoint string) (*FS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	p := &FS{backing: backing, mountpoint: mountpoint, trash: backing + ".powercut-trash", files: map[uint64]*fileState{}}
	if err := os.MkdirAll(p.trash, 0o700); err != nil {
		return nil, err
	}
	if err := p.mount(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *FS) mount() error {
	var st syscall.Stat_t
	if err := syscall.Stat(p.backing, &st); err != nil {
		return fmt.Errorf("powercut: stat %s: %w", p.backing, err)
	}
	p.rootIno = st.Ino
	root := &gofs.LoopbackRoot{Path: p.backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &node{LoopbackNode: gofs.LoopbackNode{RootData: r}, p: p}
	}
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	srv, err := gofs.Mount(p.mountpoint, rootNode, &gofs.Options{
		// Every write goes through this mount, so the kernel's page cache
		// is always right: keep it across opens and attribute changes
		// (dropping it while a process has the file mapped and writes it,
		// as bbolt does, raced). A crash remounts, which drops it.
		MountOptions: fuse.MountOptions{FsName: "powercut:" + p.backing, Name: "powercut", DirectMount: true,
			MaxBackground: 64, ExplicitDataCacheControl: true},
	})
	if err != nil {
		return fmt.Errorf("powercut: mount %s: %w", p.mountpoint, err)
	}
	p.server = srv
	return nil
}

// Mountpoint is where the filesystem is mounted.
func (p *FS) Mountpoint() string { return p.mountpoint }

// Stats returns the counters so far.
func (p *FS) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.UndoErrors = append([]string(nil), s.UndoErrors...)
	return s
}

// Unmount unmounts the filesystem (what is not durable stays, as after a
// clean shutdown).
func (p *FS) Unmount() error {
	if err := p.unmount(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetLocked()
	return nil
}

func (p *FS) unmount() error {
	if p.server == nil {
		return nil
	}
	var err error
	// The kernel releases the files of a killed process asynchronously.
	for range 100 {
		if err = p.server.Unmount(); err == nil {
			p.server.Wait()
			p.server = nil
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("powercut: unmount %s: %w", p.mountpoint, err)
}

// CrashOptions shape a power cut.
type CrashOptions struct {
	// TearLastPage keeps the first TearBytes (default half a page) of the
	// last page written before the cut instead of undoing it whole.
	TearLastPage bool
	TearBytes    int
}

// Crash is a power cut: it unmounts, drops everything not durable, and
// mounts the filesystem again.
func (p *FS) Crash(o CrashOptions) error {
	if err := p.unmount(); err != nil {
		return err
	}
	p.mu.Lock()
	p.rollbackLocked(o)
	p.mu.Unlock()
	return p.mount()
}

func (p *FS) undoErr(format string, args ...any) {
	p.stats.UndoErrors = append(p.stats.UndoErrors, fmt.Sprintf(format, args...))
}

func (p *FS) rollbackLocked(o CrashOptions) {
	p.stats.Crashes++
	var torn []byte
	var tornAt int64
	var tornFD *os.File
	if o.TearLastPage && p.last != nil {
		if st := p.files[p.last.ino]; st != nil {
			n := o.TearBytes
			if n <= 0 || n > pageSize {
				n = pageSize / 2
			}
			buf := make([]byte, n)
			tornAt = p.last.page * pageSize
			if got, _ := st.fd.ReadAt(buf, tornAt); got > 0 {
				torn, tornFD = buf[:got], st.fd
			}
		}
	}
	for ino, st := range p.files {
		for page, data := range st.saved {
			if _, err := st.fd.WriteAt(data, page*pageSize); err != nil {
				p.undoErr("restore page %d of inode %d: %v", page, ino, err)
			}
			p.stats.DroppedPages++
		}
		if fi, err := st.fd.Stat(); err == nil && fi.Size() > st.durableSize {
			p.stats.DroppedBytes += fi.Size() - st.durableSize
		}
		if err := st.fd.Truncate(st.durableSize); err != nil {
			p.undoErr("truncate inode %d: %v", ino, err)
		}
	}
	if tornFD != nil {
		if _, err := tornFD.WriteAt(torn, tornAt); err == nil {
			p.stats.TornPages++
		}
	}
	for i := len(p.ops) - 1; i >= 0; i-- {
		p.undoLocked(p.ops[i])
		p.stats.UndoneEntries++
	}
	p.ops = nil
	p.forgetLocked()
	// What is left in the trash was removed durably, or is a replaced
	// entry that could not be put back.
	entries, _ := os.ReadDir(p.trash)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(p.trash, e.Name()))
	}
}

func (p *FS) forgetLocked() {
	for _, st := range p.files {
		st.fd.Close()
	}
	p.files = map[uint64]*fileState{}
	p.last = nil
}

// dirPath finds the backing path of the directory with inode ino now.
func (p *FS) dirPath(ino uint64) (string, bool) {
	found := ""
	filepath.WalkDir(p.backing, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil && st.Ino == ino {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	return found, found != ""
}

func inoOf(path string) (uint64, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return 0, false
	}
	return st.Ino, true
}

func (p *FS) undoLocked(op *nsOp) {
	switch op.kind {
	case opCreate:
		dir, ok := p.dirPath(op.dir)
		if !ok {
			return // its directory went too
		}
		path := filepath.Join(dir, op.name)
		if ino, ok := inoOf(path); ok && ino == op.ino {
			if err := os.RemoveAll(path); err != nil {
				p.undoErr("undo create %s: %v", path, err)
			}
		}
	case opRemove:
		dir, ok := p.dirPath(op.dir)
		if !ok {
			p.undoErr("undo remove of %s: directory %d gone", op.name, op.dir)
			return
		}
		if err := os.Rename(filepath.Join(p.trash, op.trash), filepath.Join(dir, op.name)); err != nil {
			p.undoErr("undo remove of %s: %v", op.name, err)
		}
	case opRename:
		newDir, ok1 := p.dirPath(op.newDir)
		oldDir, ok2 := p.dirPath(op.dir)
		if !ok1 || !ok2 {
			p.undoErr("undo rename %s -> %s: a directory is gone", op.name, op.newName)
			return
		}
		moved := filepath.Join(newDir, op.newName)
		if ino, ok := inoOf(moved); ok && ino == op.ino {
			if err := os.Rename(moved, filepath.Join(oldDir, op.name)); err != nil {
				p.undoErr("undo rename %s -> %s: %v", op.name, op.newName, err)
			}
		}
		if op.replaced != "" {
			if err := os.Rename(filepath.Join(p.trash, op.replaced), moved); err != nil {
				p.undoErr("undo replace of %s: %v", op.newName, err)
			}
		}
	}
}

// ---- bookkeeping called from the node methods ----

func (p *FS) record(op *nsOp) {
	op.pending = map[uint64]bool{op.dir: true}
	if op.kind == opRename {
		op.pending[op.newDir] = true
	}
	p.mu.Lock()
	p.ops = append(p.ops, op)
	p.mu.Unlock()
}

// dirSynced makes durable every change whose directories are now all
// fsynced.
func (p *FS) dirSynced(dir uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.DirFsyncs++
	gone := map[uint64]bool{} // directories whose removal is now durable
	for _, op := range p.ops {
		delete(op.pending, dir)
		if len(op.pending) == 0 && op.kind == opRemove && op.isDir {
			gone[op.ino] = true
		}
	}
	kept := p.ops[:0]
	for _, op := range p.ops {
		// Changes inside a directory that is durably gone are moot: no
		// crash can bring them back.
		if len(op.pending) > 0 && !gone[op.dir] && !gone[op.newDir] {
			kept = append(kept, op)
			continue
		}
		// Durable now: a removed or replaced entry is gone for good.
		for _, t := range []string{op.trash, op.replaced} {
			if t != "" {
				os.RemoveAll(filepath.Join(p.trash, t))
			}
		}
	}
	for i := len(kept); i < len(p.ops); i++ {
		p.ops[i] = nil
	}
	p.ops = kept
}

func (p *FS) trashName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trashN++
	return strconv.Itoa(p.trashN)
}

// created registers a new empty file: until it is fsynced, its durable
// contents are nothing.
func (p *FS) created(ino uint64, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stateLocked(ino, path, 0)
}

func (p *FS) stateLocked(ino uint64, path string, size int64) *fileState {
	return p.stateFDLocked(ino, path, -1, size)
}

// stateFDLocked opens the backing file by path or, when the name is gone
// (a file written after its unlink), through a dup of the open handle.
func (p *FS) stateFDLocked(ino uint64, path string, handle int, size int64) *fileState {
	if st := p.files[ino]; st != nil {
		return st
	}
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil && handle >= 0 {
		if dup, derr := syscall.Dup(handle); derr == nil {
			fd, err = os.NewFile(uintptr(dup), path), nil
		}
	}
	if err != nil {
		return nil
	}
	if size < 0 {
		fi, err := fd.Stat()
		if err != nil {
			fd.Close()
			return nil
		}
		size = fi.Size()
	}
	st := &fileState{fd: fd, durableSize: size, saved: map[int64][]byte{}}
	p.files[ino] = st
	p.stats.OpenedFD++
	return st
}

// changing saves the durable contents of [off, end) before a write or
// truncate changes them.
func (p *FS) changing(ino uint64, path string, off, end int64, write bool) syscall.Errno {
	return p.changingFD(ino, path, -1, off, end, write)
}

func (p *FS) changingFD(ino uint64, path string, handle int, off, end int64, write bool) syscall.Errno {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stateFDLocked(ino, path, handle, -1)
	if st == nil {
		return syscall.EIO
	}
	if write && end > off {
		p.last = &lastWrite{ino: ino, page: (end - 1) / pageSize}
	}
	if end > st.durableSize {
		end = st.durableSize
	}
	for page := off / pageSize; page*pageSize < end; page++ {
		if _, ok := st.saved[page]; ok {
			continue
		}
		buf := make([]byte, pageSize)
		n, err := st.fd.ReadAt(buf, page*pageSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return gofs.ToErrno(err)
		}
		st.saved[page] = buf[:n]
	}
	return 0
}

// synced makes the file's contents durable.
func (p *FS) synced(ino uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Fsyncs++
	if st := p.files[ino]; st != nil {
		st.fd.Close()
		delete(p.files, ino)
		p.stats.SyncedFiles++
		if p.last != nil && p.last.ino == ino {
			p.last = nil
		}
	}
}

// ---- the FUSE nodes ----

type node struct {
	gofs.LoopbackNode
	p *FS
}

func (n *node) path() string { return filepath.Join(n.RootData.Path, n.Path(nil)) }

// ino is the backing inode number (the loopback's, except for the root).
func (n *node) ino() uint64 {
	if n.IsRoot() {
		return n.p.rootIno
	}
	return n.StableAttr().Ino
}

var (
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeFsyncer        = (*node)(nil)
	_ gofs.NodeAllocater      = (*node)(nil)
)

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	path := filepath.Join(n.path(), name)
	_, existed := inoOf(path)
	if existed && flags&syscall.O_TRUNC != 0 {
		if ino, ok := inoOf(path); ok {
			if errno := n.p.changing(ino, path, 0, 1<<62, false); errno != 0 {
				return nil, nil, 0, errno
			}
		}
	}
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return ch, fh, fl, errno
	}
	fl |= fuse.FOPEN_KEEP_CACHE
	if !existed {
		n.p.record(&nsOp{kind: opCreate, dir: n.ino(), name: name, ino: ch.StableAttr().Ino})
		n.p.created(ch.StableAttr().Ino, path)
	}
	return ch, wrapFile(fh, ch.Operations().(*node)), fl, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.p.record(&nsOp{kind: opCreate, dir: n.ino(), name: name, ino: ch.StableAttr().Ino})
	}
	return ch, errno
}

// remove moves the entry to the trash instead of deleting it.
func (n *node) remove(name string, isDir bool) syscall.Errno {
	path := filepath.Join(n.path(), name)
	ino, ok := inoOf(path)
	if !ok {
		return syscall.ENOENT
	}
	t := n.p.trashName()
	if err := os.Rename(path, filepath.Join(n.p.trash, t)); err != nil {
		return gofs.ToErrno(err)
	}
	n.p.record(&nsOp{kind: opRemove, dir: n.ino(), name: name, ino: ino, trash: t, isDir: isDir})
	return 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return n.remove(name, false) }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	path := filepath.Join(n.path(), name)
	entries, err := os.ReadDir(path)
	if err != nil {
		return gofs.ToErrno(err)
	}
	if len(entries) > 0 {
		return syscall.ENOTEMPTY
	}
	return n.remove(name, true)
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok || flags != 0 {
		return syscall.ENOTSUP // RENAME_EXCHANGE / NOREPLACE: not needed here
	}
	from := filepath.Join(n.path(), name)
	to := filepath.Join(np.path(), newName)
	ino, ok := inoOf(from)
	if !ok {
		return syscall.ENOENT
	}
	replaced := ""
	if old, ok := inoOf(to); ok && old != ino {
		// Keep what the rename replaces: a hard link for a file (the
		// rename itself stays atomic), a move for an (empty) directory.
		replaced = n.p.trashName()
		var st syscall.Stat_t
		syscall.Lstat(to, &st)
		var err error
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			err = os.Rename(to, filepath.Join(n.p.trash, replaced))
		} else {
			err = os.Link(to, filepath.Join(n.p.trash, replaced))
		}
		if err != nil {
			return gofs.ToErrno(err)
		}
	}
	if err := syscall.Rename(from, to); err != nil {
		if replaced != "" {
			os.Remove(filepath.Join(n.p.trash, replaced))
		}
		return gofs.ToErrno(err)
	}
	n.p.record(&nsOp{kind: opRename, dir: n.ino(), name: name, newDir: np.ino(), newName: newName, ino: ino, replaced: replaced})
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if errno := n.p.changing(n.ino(), n.path(), 0, 1<<62, false); errno != 0 {
			return nil, 0, errno
		}
	}
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	return wrapFile(fh, n), fl | fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	return &dirHandle{DirStream: fh.(gofs.DirStream), n: n}, fl, 0
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if errno := n.p.changing(n.ino(), n.path(), int64(size), 1<<62, false); errno != 0 {
			return errno
		}
	}
	if pf, ok := f.(*file); ok {
		f = pf.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Allocate(ctx context.Context, f gofs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if errno := n.p.changing(n.ino(), n.path(), int64(off), int64(off+size), true); errno != 0 {
		return errno
	}
	pf, ok := f.(*file)
	if !ok {
		return syscall.EBADF
	}
	return pf.LoopbackFile.Allocate(ctx, off, size, mode)
}

func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if n.IsDir() {
		return n.syncDir()
	}
	pf, ok := f.(*file)
	if !ok {
		return syscall.EBADF
	}
	if d := n.p.fsyncDelay.Load(); d != nil {
		if wait := (*d)(); wait > 0 {
			time.Sleep(wait)
		}
	}
	if errno := pf.LoopbackFile.Fsync(ctx, flags); errno != 0 {
		return errno
	}
	n.p.synced(n.ino())
	return 0
}

func (n *node) syncDir() syscall.Errno {
	d, err := os.Open(n.path())
	if err != nil {
		return gofs.ToErrno(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return gofs.ToErrno(err)
	}
	n.p.dirSynced(n.ino())
	return 0
}

// CopyFileRange is refused so the kernel falls back to plain writes,
// which are tracked.
func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

type dirHandle struct {
	gofs.DirStream
	n *node
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno { return d.n.syncDir() }

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.DirStream.(gofs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
	} else {
		d.DirStream.Close()
	}
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := d.DirStream.(gofs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	if !d.HasNext() {
		return nil, 0
	}
	e, errno := d.Next()
	return &e, errno
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.DirStream.(gofs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

// file wraps a loopback file so writes are tracked and never bypass the
// daemon (no passthrough to the backing fd).
type file struct {
	*gofs.LoopbackFile
	n *node
}

func wrapFile(fh gofs.FileHandle, n *node) gofs.FileHandle {
	return &file{LoopbackFile: fh.(*gofs.LoopbackFile), n: n}
}

func (f *file) PassthroughFd() (int, bool) { return -1, false }

// handle is the backing fd of this open file.
func (f *file) handle() int {
	fd, _ := f.LoopbackFile.PassthroughFd()
	return fd
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.n.p.changingFD(f.n.ino(), f.n.path(), f.handle(), off, off+int64(len(data)), true); errno != 0 {
		return 0, errno
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var size int64
	for _, b := range data {
		size += int64(len(b))
	}
	if errno := f.n.p.changingFD(f.n.ino(), f.n.path(), f.handle(), off, off+size, true); errno != 0 {
		return 0, errno
	}
	return f.LoopbackFile.Writev(ctx, data, off)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return f.n.Allocate(ctx, f, off, size, mode)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return f.n.Fsync(ctx, f, flags)
}
