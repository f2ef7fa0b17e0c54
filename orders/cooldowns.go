package orders

import (
	"fmt"
	"strconv"
	"strings"

	"masterorder/kv"
	"masterorder/raftfsm"
)

// A guest's cooldown after a success (row 8) is keyed by the phone: a
// KV key per phone, `cooldown:{clientId}`, put on a random page of the
// KV's bbolt by nearly every order, since every phone is new to it.
// Version 6 of placeOrder keeps it in a record named by the order's own
// Raft index instead, `cooldowns:{index, 16 hex digits}` holding the
// client id, with the cooldown's TTL: records append to the KV's last
// page, and the KV's expiry removes them as it removed the keys. The
// admission state reads them into memory (by client), and the gate asks
// both: a legacy key (an order of an older version) or a record.
//
// A client's records are judged by the latest end among them, in memory
// and when read back from the files alike, so which of them the expiry
// has already removed never changes an answer (a lapsed one cannot be
// the latest live end).
const (
	prefixCooldownRecord = "cooldowns:"
	// placeCooldownRecordVersion is the first placeOrder version that
	// writes cooldown records.
	placeCooldownRecordVersion = 6
)

func keyCooldownRecord(index uint64) string {
	return fmt.Sprintf("%s%016x", prefixCooldownRecord, index)
}

// startCooldown writes a version 6 order's cooldown record and keeps it
// in memory (the caller checked CooldownMs > 0).
func (s *admitState) startCooldown(ctx *raftfsm.ApplyContext, tx *kv.Tx, clientID string, ms int64) error {
	ttl := msDuration(ms)
	if err := tx.Put(keyCooldownRecord(ctx.Index), []byte(clientID), ttl); err != nil {
		return err
	}
	s.noteCooldown(clientID, tx.Now()+ttl.Milliseconds())
	return nil
}

// noteCooldown records that clientID's cooldown lasts at least until end.
func (s *admitState) noteCooldown(clientID string, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end > s.cooldowns[clientID] {
		s.cooldowns[clientID] = end
	}
}

// loadCooldowns reads the live records into a fresh map (rebuild).
func loadCooldowns(tx *kv.Tx) map[string]int64 {
	out := map[string]int64{}
	tx.Scan(prefixCooldownRecord, func(e kv.Entry) bool {
		if _, err := strconv.ParseUint(strings.TrimPrefix(e.Key, prefixCooldownRecord), 16, 64); err != nil || e.ExpiresAt == 0 {
			return true // not a record this build writes
		}
		if client := string(e.Value); e.ExpiresAt > out[client] {
			out[client] = e.ExpiresAt
		}
		return true
	})
	return out
}

// cooldown is row 8's window for clientID at now, from memory: the legacy
// key's or the records', the later end when both are live.
func (s *admitState) cooldown(clientID string, now int64) (end int64, live bool) {
	if e, ok := s.window(keyCooldown(clientID), now); ok {
		end, live = e.ExpiresAt, true
	}
	if rec := s.cooldowns[clientID]; rec > now && (!live || (end != 0 && rec > end)) {
		end, live = rec, true
	}
	return end, live
}

// recordCooldown is the records' cooldown for clientID at now, for the
// receiving box's check before proposing (preadmit.go), beside the apply
// path; usable is false when the memory does not hold the files at
// epoch, and the caller leaves the records to Apply.
func (s *admitState) recordCooldown(epoch uint64, clientID string, now int64) (end int64, live, usable bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.built || s.epoch != epoch {
		return 0, false, false
	}
	if rec := s.cooldowns[clientID]; rec > now {
		return rec, true, true
	}
	return 0, false, true
}

// pruneCooldowns drops lapsed ends (prune; the caller holds mu).
func (s *admitState) pruneCooldowns(now int64) {
	for client, end := range s.cooldowns { // deletions only
		if end <= now {
			delete(s.cooldowns, client)
		}
	}
}
