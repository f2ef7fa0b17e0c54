package raftfsm

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// The feature level: the version gate of the log.
//
// A build applies every version of its commands up to its table's newest
// (RegisterVersions), but it may propose a version only once every member
// of the cluster applies it, or an older box halts on it ("upgrade this
// node") and a box rolled back to the previous build stays halted. So the
// cluster records a feature level in the replicated state: a number that
// only goes up, raised by one command the leader proposes when every
// member reports a build that knows that level (node/featurelevel.go).
// Each build declares, per level, the newest version of each command a
// proposer may use at that level (SetFeatureLevels; the domain fills it,
// the FSM stays generic). Proposers use ProposableVersion: the newest of
// this build's table that the cluster's level allows.
//
// Level 0 is "none": a store written by the builds before the gate. It
// allows what level 1 allows, and level 1 must allow exactly what those
// builds proposed, so that mixed versions are safe from the first day.

// CmdFeatureLevel raises the cluster's feature level (a cluster command:
// 1–31). Its payload is the level, 4 bytes big-endian.
const CmdFeatureLevel CommandType = 3

// keyLevel is the cluster's feature level in the meta bucket (absent: 0).
var keyLevel = []byte("featureLevel")

// LevelTable tells what a proposer may use at a feature level: the newest
// version of t (0: t is not proposed at that level). It is called only
// with 1 ≤ level ≤ the build's own level.
type LevelTable func(t CommandType, level uint32) uint8

// SetFeatureLevels declares this build's feature level (top, at least 1)
// and what each level up to it allows. Without it a build is at level 1,
// which allows every version its table applies (a cluster of one build).
func (r *Registry) SetFeatureLevels(top uint32, allowed LevelTable) {
	if top < 1 || allowed == nil {
		panic("raftfsm: feature levels need a top level ≥ 1 and a table")
	}
	r.top, r.allowed = top, allowed
}

// BuildLevel is the newest feature level this build knows: the level it
// reports to the leader (node/featurelevel.go).
func (r *Registry) BuildLevel() uint32 {
	if r.top == 0 {
		return 1
	}
	return r.top
}

// proposable is the newest version of t a proposer may use at the
// cluster's level: never newer than this table applies, never newer than
// the level allows. A level above this build's (the box was rolled back
// after the raise) counts as this build's own.
func (r *Registry) proposable(t CommandType, level uint32) uint8 {
	v := r.handlers[t].maxVersion
	if r.allowed == nil {
		return v
	}
	level = min(max(level, 1), r.BuildLevel())
	return min(v, r.allowed(t, level))
}

// EncodeFeatureLevel is the payload of a CmdFeatureLevel raising to level.
func EncodeFeatureLevel(level uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, level)
}

// applyFeatureLevel raises the stored level; a level at or below the
// current one changes nothing (the level never goes down). It answers the
// level now in force, as decimal text. A level above this build's own is
// stored too (the number is all the state there is): this box then keeps
// proposing its own build's versions and halts on the first entry it
// cannot apply, as any old build does.
func (f *FSM) applyFeatureLevel(ctx *ApplyContext, payload []byte) ([]byte, error) {
	if len(payload) != 4 {
		// Corrupt alike on every node: answered, never a halt.
		return []byte(fmt.Sprintf("malformed feature level payload of %d bytes", len(payload))), nil
	}
	want := binary.BigEndian.Uint32(payload)
	b := ctx.Bolt.Bucket(metaBucket)
	cur := uint32(getU64(b, keyLevel))
	if want > cur {
		if err := putU64(b, keyLevel, uint64(want)); err != nil {
			return nil, err
		}
		cur = want
		if top := f.reg.BuildLevel(); want > top {
			f.log.Warn("the cluster's feature level is newer than this build knows: this box halts at the first entry it cannot apply; upgrade this node",
				"featureLevel", want, "buildLevel", top)
		}
		// Proposers may use it from now on: the raise is committed.
		f.level.Store(want)
	}
	return []byte(strconv.FormatUint(uint64(cur), 10)), nil
}

// FeatureLevel is the cluster's feature level as this replica applied it
// (0: none yet, a store from before the gate).
func (f *FSM) FeatureLevel() uint32 { return f.level.Load() }

// BuildLevel is the newest feature level this build knows.
func (f *FSM) BuildLevel() uint32 { return f.reg.BuildLevel() }

// ProposableVersion is the newest version of t this node may propose now:
// at most what its own table applies and what the cluster's feature level
// allows (0: t is unknown here, or not switched on yet).
func (f *FSM) ProposableVersion(t CommandType) uint8 {
	return f.reg.proposable(t, f.level.Load())
}
