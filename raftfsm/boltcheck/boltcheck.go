// Package boltcheck checks a bbolt file from its bytes, without mapping
// it or opening it with bbolt. It checks what bbolt trusts blindly at
// open: a valid meta page describing a file at least this long, and every
// page reachable from the root (branches, leaves, nested and inline
// buckets) with the right id, a known type and elements inside the page.
// bbolt's own checks run in a goroutine of their own and panic there,
// which no recover can catch: the FSM (raftfsm/repair.go) runs this first
// so that a torn file never gets that far.
package boltcheck

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// Check reads data as a whole bbolt file; an error says what is wrong
// with it. An empty file is sound (bbolt initializes it).
func Check(data []byte) error {
	if len(data) == 0 {
		return nil // bbolt initializes an empty file
	}
	le := binary.LittleEndian
	type meta struct {
		pageSize   uint32
		root, pgid uint64
		txid       uint64
	}
	readMeta := func(off int) (meta, bool) {
		if off+pageHeader+64 > len(data) {
			return meta{}, false
		}
		m := data[off+pageHeader:]
		if le.Uint32(m[0:]) != 0xED0CDAED || le.Uint32(m[4:]) != 2 {
			return meta{}, false
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != le.Uint64(m[56:]) {
			return meta{}, false
		}
		return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
	}
	m0, ok0 := readMeta(0)
	ps := 4096
	if ok0 && m0.pageSize >= 512 && m0.pageSize <= 1<<16 {
		ps = int(m0.pageSize)
	}
	m1, ok1 := readMeta(ps)
	var m meta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return fmt.Errorf("no valid meta page (%d bytes)", len(data))
	}
	if m.pageSize < 512 || m.pageSize > 1<<16 || m.root < 2 || m.root >= m.pgid {
		return fmt.Errorf("meta page describes an impossible file (page size %d, root %d, pages %d)", m.pageSize, m.root, m.pgid)
	}
	ps = int(m.pageSize)
	if m.pgid > uint64(len(data)/ps) {
		return fmt.Errorf("cut short: the meta page says %d pages of %d bytes, the file has %d bytes", m.pgid, ps, len(data))
	}
	w := walker{data: data, ps: ps, pgid: m.pgid, seen: map[uint64]bool{}}
	return w.page(m.root, 0)
}

const (
	pageHeader      = 16 // id u64, flags u16, count u16, overflow u32
	elemSize        = 16 // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	inBucketSize    = 16 // root pgid u64, sequence u64
	maxBucketDepth  = 64
	maxBTreeHeight  = 64
	maxInlineNested = 64
)

type walker struct {
	data []byte
	ps   int
	pgid uint64
	seen map[uint64]bool
}

func (w *walker) page(id uint64, depth int) error {
	if depth > maxBTreeHeight+maxBucketDepth {
		return fmt.Errorf("tree deeper than %d", depth)
	}
	if id < 2 || id >= w.pgid {
		return fmt.Errorf("page %d outside the file's %d pages", id, w.pgid)
	}
	if w.seen[id] {
		return fmt.Errorf("page %d reachable twice", id)
	}
	w.seen[id] = true
	off := int(id) * w.ps
	le := binary.LittleEndian
	if got := le.Uint64(w.data[off:]); got != id {
		return fmt.Errorf("page %d says it is page %d", id, got)
	}
	overflow := int(le.Uint32(w.data[off+12:]))
	end := off + (overflow+1)*w.ps
	if overflow < 0 || id+uint64(overflow) >= w.pgid || end > len(w.data) {
		return fmt.Errorf("page %d overflows past the end of the file", id)
	}
	for i := uint64(1); i <= uint64(overflow); i++ {
		w.seen[id+i] = true
	}
	return w.elements(w.data[off:end], id, depth)
}

// elements checks one page's elements (p starts at its header) and walks
// its children.
func (w *walker) elements(p []byte, id uint64, depth int) error {
	le := binary.LittleEndian
	flags := le.Uint16(p[8:])
	count := int(le.Uint16(p[10:]))
	if pageHeader+count*elemSize > len(p) {
		return fmt.Errorf("page %d: %d elements do not fit", id, count)
	}
	for i := range count {
		e := pageHeader + i*elemSize
		switch flags {
		case branchPageFlag:
			pos, ksize := int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:]))
			if e+pos+ksize > len(p) {
				return fmt.Errorf("page %d: key %d outside the page", id, i)
			}
			if err := w.page(le.Uint64(p[e+8:]), depth+1); err != nil {
				return err
			}
		case leafPageFlag:
			eflags, pos := le.Uint32(p[e:]), int(le.Uint32(p[e+4:]))
			ksize, vsize := int(le.Uint32(p[e+8:])), int(le.Uint32(p[e+12:]))
			start := e + pos + ksize
			if pos < 0 || ksize < 0 || vsize < 0 || start+vsize > len(p) {
				return fmt.Errorf("page %d: element %d outside the page", id, i)
			}
			if eflags&bucketLeafFlag == 0 {
				continue
			}
			v := p[start : start+vsize]
			if len(v) < inBucketSize {
				return fmt.Errorf("page %d: bucket header of %d bytes", id, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				if err := w.page(root, depth+1); err != nil {
					return err
				}
				continue
			}
			// An inline bucket: its page follows the header in the value.
			inline := v[inBucketSize:]
			if len(inline) < pageHeader || depth > maxInlineNested {
				return fmt.Errorf("page %d: inline bucket of %d bytes", id, len(inline))
			}
			if err := w.elements(inline, id, depth+1); err != nil {
				return err
			}
		default:
			return fmt.Errorf("page %d has type %#x", id, flags)
		}
	}
	if count == 0 && flags != leafPageFlag && flags != branchPageFlag {
		return fmt.Errorf("page %d has type %#x", id, flags)
	}
	return nil
}
