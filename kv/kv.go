// Package kv is the coordination KV: keys with a TTL judged on FSM time,
// stored in the FSM's bbolt file. The same Tx type serves handlers inside
// Apply (the guest order runs its admission checks with it) and local reads.
package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketKV  = []byte("kv")
	bucketExp = []byte("kvexp") // [expiresAt][key] -> nil, to find due keys in order
)

// MaxKeyLen bounds keys; they are built from validated ids.
const MaxKeyLen = 512

// Entry is one live key.
type Entry struct {
	Key       string `json:"key"`
	Value     []byte `json:"value"`
	ExpiresAt int64  `json:"expiresAt"` // FSM milliseconds; 0 = no expiry
	Revision  uint64 `json:"revision"`  // Raft index of the write (a fencing token)
}

// Tx is a view of the KV at one FSM time. Writes need a writable bolt tx
// (inside Apply); Revision is then the applying command's index.
type Tx struct {
	b     *bolt.Tx
	now   int64
	index uint64
	// readKV is the kv bucket of a read-only view once Get opened it: a
	// read-only bbolt transaction opens a bucket afresh (a search of the
	// root page and a new Bucket) on every Bucket call, and a guest order
	// reads several keys per view. A writable one caches its own.
	readKV *bolt.Bucket
}

// NewTx wraps a bolt transaction at FSM time now (milliseconds); index is
// the Raft index of the command writing through it (0 for reads).
func NewTx(b *bolt.Tx, now int64, index uint64) *Tx {
	return &Tx{b: b, now: now, index: index}
}

// Now is the FSM time this Tx judges expiry by.
func (t *Tx) Now() int64 { return t.now }

func encode(value []byte, expiresAt int64, rev uint64) []byte {
	buf := make([]byte, 16+len(value))
	binary.BigEndian.PutUint64(buf, uint64(expiresAt))
	binary.BigEndian.PutUint64(buf[8:], rev)
	copy(buf[16:], value)
	return buf
}

func decode(key, raw []byte) Entry {
	if len(raw) < 16 {
		return Entry{Key: string(key)}
	}
	return Entry{
		Key:       string(key),
		ExpiresAt: int64(binary.BigEndian.Uint64(raw)),
		Revision:  binary.BigEndian.Uint64(raw[8:]),
		Value:     append([]byte(nil), raw[16:]...),
	}
}

func (t *Tx) live(e Entry) bool { return e.ExpiresAt == 0 || e.ExpiresAt > t.now }

// Get returns the live entry for key; an expired key is invisible at once.
func (t *Tx) Get(key string) (Entry, bool) {
	b := t.readKV
	if b == nil {
		b = t.b.Bucket(bucketKV)
		if !t.b.Writable() {
			t.readKV = b
		}
	}
	if b == nil {
		return Entry{}, false
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return Entry{}, false
	}
	e := decode([]byte(key), raw)
	if !t.live(e) {
		return Entry{}, false
	}
	return e, true
}

// Has reports whether key is live.
func (t *Tx) Has(key string) bool {
	_, ok := t.Get(key)
	return ok
}

func checkKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("kv: key length %d outside 1..%d", len(key), MaxKeyLen)
	}
	return nil
}

func (t *Tx) buckets() (*bolt.Bucket, *bolt.Bucket, error) {
	// Both exist after the first write ever; Bucket is a map lookup once
	// the transaction has opened them, CreateBucketIfNotExists a search.
	if kvb, exp := t.b.Bucket(bucketKV), t.b.Bucket(bucketExp); kvb != nil && exp != nil {
		return kvb, exp, nil
	}
	kvb, err := t.b.CreateBucketIfNotExists(bucketKV)
	if err != nil {
		return nil, nil, fmt.Errorf("kv bucket: %w", err)
	}
	exp, err := t.b.CreateBucketIfNotExists(bucketExp)
	if err != nil {
		return nil, nil, fmt.Errorf("kv expiry bucket: %w", err)
	}
	return kvb, exp, nil
}

func expKey(expiresAt int64, key string) []byte {
	k := make([]byte, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(expiresAt))
	copy(k[8:], key)
	return k
}

// Put writes key unconditionally; ttl 0 means no expiry.
func (t *Tx) Put(key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	kvb, exp, err := t.buckets()
	if err != nil {
		return err
	}
	if old := kvb.Get([]byte(key)); old != nil {
		if e := decode([]byte(key), old); e.ExpiresAt != 0 {
			if err := exp.Delete(expKey(e.ExpiresAt, key)); err != nil {
				return fmt.Errorf("kv put %s: %w", key, err)
			}
		}
	}
	var expiresAt int64
	if ttl > 0 {
		expiresAt = t.now + ttl.Milliseconds()
		if err := exp.Put(expKey(expiresAt, key), nil); err != nil {
			return fmt.Errorf("kv put %s: %w", key, err)
		}
	}
	if err := kvb.Put([]byte(key), encode(value, expiresAt, t.index)); err != nil {
		return fmt.Errorf("kv put %s: %w", key, err)
	}
	return nil
}

// SetIfAbsent writes key only when no live entry exists.
func (t *Tx) SetIfAbsent(key string, value []byte, ttl time.Duration) (bool, error) {
	if t.Has(key) {
		return false, nil
	}
	return true, t.Put(key, value, ttl)
}

// Delete removes key; it reports whether a live entry was there.
func (t *Tx) Delete(key string) (bool, error) {
	kvb := t.b.Bucket(bucketKV)
	if kvb == nil {
		return false, nil
	}
	raw := kvb.Get([]byte(key))
	if raw == nil {
		return false, nil
	}
	e := decode([]byte(key), raw)
	if err := t.remove(e); err != nil {
		return false, err
	}
	return t.live(e), nil
}

func (t *Tx) remove(e Entry) error {
	if e.ExpiresAt != 0 {
		if exp := t.b.Bucket(bucketExp); exp != nil {
			if err := exp.Delete(expKey(e.ExpiresAt, e.Key)); err != nil {
				return fmt.Errorf("kv delete %s: %w", e.Key, err)
			}
		}
	}
	if err := t.b.Bucket(bucketKV).Delete([]byte(e.Key)); err != nil {
		return fmt.Errorf("kv delete %s: %w", e.Key, err)
	}
	return nil
}

// CompareAndDelete removes key only if its live value equals expected.
func (t *Tx) CompareAndDelete(key string, expected []byte) (bool, error) {
	e, ok := t.Get(key)
	if !ok || !bytes.Equal(e.Value, expected) {
		return false, nil
	}
	return true, t.remove(e)
}

// Scan calls fn for every live key with prefix, in key order; fn returns
// false to stop.
func (t *Tx) Scan(prefix string, fn func(Entry) bool) {
	kvb := t.b.Bucket(bucketKV)
	if kvb == nil {
		return
	}
	c := kvb.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		e := decode(k, v)
		if !t.live(e) {
			continue
		}
		if !fn(e) {
			return
		}
	}
}

// DeletePrefix removes every key (live or not) with prefix.
func (t *Tx) DeletePrefix(prefix string) (int, error) {
	kvb := t.b.Bucket(bucketKV)
	if kvb == nil || prefix == "" {
		return 0, nil
	}
	var doomed []Entry
	c := kvb.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		doomed = append(doomed, decode(k, v))
	}
	for _, e := range doomed {
		if err := t.remove(e); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}

// ExpireDue removes up to limit keys whose expiry is at or before now, in
// expiry order, and returns how many it removed.
func (t *Tx) ExpireDue(limit int) (int, error) {
	exp := t.b.Bucket(bucketExp)
	if exp == nil {
		return 0, nil
	}
	var due [][]byte
	c := exp.Cursor()
	for k, _ := c.First(); k != nil && len(due) < limit; k, _ = c.Next() {
		if int64(binary.BigEndian.Uint64(k)) > t.now {
			break
		}
		due = append(due, append([]byte(nil), k...))
	}
	kvb := t.b.Bucket(bucketKV)
	for _, k := range due {
		if err := exp.Delete(k); err != nil {
			return 0, fmt.Errorf("kv expire: %w", err)
		}
		key := k[8:]
		if kvb != nil {
			if raw := kvb.Get(key); raw != nil && !t.live(decode(key, raw)) {
				if err := kvb.Delete(key); err != nil {
					return 0, fmt.Errorf("kv expire: %w", err)
				}
			}
		}
	}
	return len(due), nil
}

// Cond is one condition of a Txn.
type Cond struct {
	Key    string `json:"key"`
	Absent bool   `json:"absent,omitempty"` // key must not be live
	Value  []byte `json:"value,omitempty"`  // otherwise: live with this value (nil: any value)
}

// Op is one write of a Txn.
type Op struct {
	Key    string `json:"key"`
	Delete bool   `json:"delete,omitempty"`
	Value  []byte `json:"value,omitempty"`
	TTLms  int64  `json:"ttlMs,omitempty"`
}

// Txn checks every condition, then performs every write, or nothing.
func (t *Tx) Txn(conds []Cond, ops []Op) (bool, error) {
	for _, c := range conds {
		e, ok := t.Get(c.Key)
		switch {
		case c.Absent && ok:
			return false, nil
		case !c.Absent && !ok:
			return false, nil
		case !c.Absent && c.Value != nil && !bytes.Equal(e.Value, c.Value):
			return false, nil
		}
	}
	for _, o := range ops {
		if err := checkKey(o.Key); err != nil {
			return false, err
		}
	}
	for _, o := range ops {
		var err error
		if o.Delete {
			_, err = t.Delete(o.Key)
		} else {
			err = t.Put(o.Key, o.Value, time.Duration(o.TTLms)*time.Millisecond)
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// Due reports whether any key has lapsed at FSM time now (so an expire
// command has work to do).
func Due(b *bolt.Tx, now int64) bool {
	exp := b.Bucket(bucketExp)
	if exp == nil {
		return false
	}
	k, _ := exp.Cursor().First()
	return len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) <= now
}
