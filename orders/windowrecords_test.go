package orders

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The records' memory, kept record by record, answers as one read back
// from whichever records the KV's expiry has not removed yet (it removes
// only lapsed ones, in any order and at any time): the rule every box's
// rebuild relies on (windowrecords.go). Windows of mixed lengths, so a
// later record may end before an earlier one, and releases.
func TestWindowRecordsAnswerAsReadBackAfterAnyExpiry(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			type stored struct {
				index     uint64
				rec       windowRecord
				expiresAt int64
			}
			var files []stored
			kept := newWindowRecords()
			now := int64(1000)
			for index := uint64(1); index <= 400; index++ {
				now += int64(r.IntN(300))
				client, session := fmt.Sprint("c", r.IntN(3)), fmt.Sprint("s", r.IntN(3))
				var rec windowRecord
				var ttl int64
				if e, live := kept.bursts[session]; r.IntN(8) == 0 && live && e.end > now {
					rec, ttl = windowRecord{session: session, burstEnd: burstReleased}, e.end-now
				} else {
					cd, burst := []int64{0, 200, 3000}[r.IntN(3)], []int64{0, 1000, 100}[r.IntN(3)]
					if cd == 0 && burst == 0 {
						continue
					}
					rec = windowRecord{client: client, session: session}
					if cd > 0 {
						rec.cooldownEnd = now + cd
					}
					if burst > 0 {
						rec.burstEnd = now + burst
					}
					ttl = max(cd, burst)
				}
				kept.add(rec, index)
				files = append(files, stored{index, rec, now + ttl})
				// The expiry removes some lapsed records.
				files = slices.DeleteFunc(files, func(s stored) bool { return s.expiresAt <= now && r.IntN(2) == 0 })
				if r.IntN(10) == 0 {
					kept.prune(now)
				}
				read := newWindowRecords()
				for _, s := range files {
					if s.expiresAt > now { // a scan sees live keys only
						read.add(s.rec, s.index)
					}
				}
				for i := range 3 {
					for _, m := range []struct {
						name       string
						kept, read map[string]recordEnd
						id         string
					}{{"cooldown", kept.cooldowns, read.cooldowns, fmt.Sprint("c", i)}, {"burst", kept.bursts, read.bursts, fmt.Sprint("s", i)}} {
						k, kLive := m.kept[m.id]
						d, dLive := m.read[m.id]
						kLive, dLive = kLive && k.end > now, dLive && d.end > now
						if kLive != dLive || (kLive && k != d) {
							t.Fatalf("index %d now %d: %s of %s kept %+v (live %v), read back %+v (live %v)", index, now, m.name, m.id, k, kLive, d, dLive)
						}
					}
				}
			}
		})
	}
}

// A record reads back as it was written; a truncated or padded one does
// not read at all.
func TestWindowRecordEncoding(t *testing.T) {
	for _, r := range []windowRecord{
		{client: "guest-1", cooldownEnd: 123456789, session: "S1", burstEnd: 99},
		{session: "S2", burstEnd: burstReleased},
		{client: "guest-2", cooldownEnd: 5},
	} {
		b := r.encode()
		if got, ok := decodeWindowRecord(b); !ok || got != r {
			t.Fatalf("%+v read back as %+v (%v)", r, got, ok)
		}
		if _, ok := decodeWindowRecord(b[:len(b)-1]); ok {
			t.Fatalf("%+v truncated still reads", r)
		}
		if _, ok := decodeWindowRecord(append(b, 0)); ok {
			t.Fatalf("%+v padded still reads", r)
		}
	}
}
