package cloudsync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"time"
)

// write is the last word on one document within a batch.
type write struct {
	orderID int64
	delete  bool
	doc     map[string]any // normalized copy; nil for a delete
	seq     uint64         // the change that decided it
}

// skipped is a change that can never be written (its document cannot be
// represented in Firestore). It is logged and marked synced so that it does
// not block the outbox forever.
type skipped struct {
	seq     uint64
	orderID int64
	err     error
}

// plan folds a batch into one write per document, in the order the
// documents first appear. Within a batch the later change (by Seq) wins: a
// later upsert replaces the whole document and a delete after an upsert
// deletes it, exactly as writing every change in Seq order would. An
// unknown op stops the batch (a newer version wrote it; retrying after the
// upgrade is right, skipping would lose it).
func plan(changes []Change) (writes []write, skips []skipped, seqs []uint64, err error) {
	index := make(map[int64]int, len(changes))
	seqs = make([]uint64, 0, len(changes))
	for i, c := range changes {
		if i > 0 && c.Seq <= changes[i-1].Seq {
			return nil, nil, nil, fmt.Errorf("outbox returned seq %d after %d: Pending must be oldest first", c.Seq, changes[i-1].Seq)
		}
		seqs = append(seqs, c.Seq)
		w := write{orderID: c.OrderID, seq: c.Seq}
		switch c.Op {
		case OpUpsert:
			doc, nerr := normalizeDoc(c.OrderID, c.Doc)
			if nerr != nil {
				skips = append(skips, skipped{seq: c.Seq, orderID: c.OrderID, err: nerr})
				continue
			}
			w.doc = doc
		case OpDelete:
			w.delete = true
		default:
			return nil, nil, nil, fmt.Errorf("outbox seq %d has unknown op %q", c.Seq, c.Op)
		}
		if j, ok := index[c.OrderID]; ok {
			writes[j] = w
			continue
		}
		index[c.OrderID] = len(writes)
		writes = append(writes, w)
	}
	return writes, skips, seqs, nil
}

// normalizeDoc copies an upsert's fields into the types the document
// contract promises, so that a map decoded from JSON is written exactly like
// one built in Go:
//
//   - json.Number and whole float64 values become int64 (encoding/json
//     decodes every number as float64; order fields are integers);
//   - time.Time becomes an RFC 3339 string (createdAt/updatedAt are strings);
//   - orderId is set from the change, so it always matches the document id;
//   - syncedAt is not taken from the caller (the Syncer sets it to the
//     Firestore server time).
//
// Values Firestore cannot store (channels, functions, non-string map keys…)
// are an error.
func normalizeDoc(orderID int64, in map[string]any) (map[string]any, error) {
	if in == nil {
		return nil, fmt.Errorf("order %d: upsert without a document", orderID)
	}
	out := make(map[string]any, len(in)+2)
	for k, v := range in {
		if k == FieldSyncedAt {
			continue
		}
		nv, err := normalizeValue(v)
		if err != nil {
			return nil, fmt.Errorf("order %d: field %q: %w", orderID, k, err)
		}
		out[k] = nv
	}
	out[FieldOrderID] = orderID
	return out, nil
}

func normalizeValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, []byte:
		return v, nil
	case int, int8, int16, int32, uint, uint8, uint16, uint32, uint64:
		return wholeInt64(v)
	case float32:
		return normalizeValue(float64(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int64(x), nil
		}
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("bad number %q", string(x))
		}
		return normalizeValue(f)
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case *string:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ne, err := normalizeValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = ne
		}
		return m, nil
	case []any:
		return normalizeSlice(x)
	case []map[string]any:
		return normalizeSlice(x)
	default:
		// Anything else (a struct, a typed slice) goes through JSON, which
		// is how the server's order objects are defined anyway.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("unsupported value of type %T: %v", v, err)
		}
		var back any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&back); err != nil {
			return nil, fmt.Errorf("unsupported value of type %T: %v", v, err)
		}
		return normalizeValue(back)
	}
}

// wholeInt64 turns any Go integer into the int64 Firestore stores, or says
// that an unsigned one is too large for it.
func wholeInt64(v any) (any, error) {
	rv := reflect.ValueOf(v)
	if rv.CanInt() {
		return rv.Int(), nil
	}
	u := rv.Uint()
	if u > math.MaxInt64 {
		return nil, fmt.Errorf("integer %d overflows int64", u)
	}
	return int64(u), nil
}

func normalizeSlice[E any](x []E) (any, error) {
	s := make([]any, len(x))
	for i, e := range x {
		ne, err := normalizeValue(e)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		s[i] = ne
	}
	return s, nil
}
