package orders

import (
	"encoding/json"
	"testing"

	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/raftfsm"
)

// TestShopTimeZoneApply: Apply judges a zone by its shape only, so boxes
// whose zone databases differ answer alike: a well-shaped name no
// database has is stored (each box falls back when it cannot load it,
// storeZone), a badly shaped one is MALFORMED_COMMAND everywhere; the
// stored value is the command's, whatever zone the applying box runs in.
func TestShopTimeZoneApply(t *testing.T) {
	f, commit := openClockedFSM(t)
	apply := func(payload any) Result {
		t.Helper()
		p, _ := encodeCommand(payload, versionOf(CmdShopTimeZone))
		return commit(raftfsm.Command{Type: CmdShopTimeZone, Version: versionOf(CmdShopTimeZone), FSMTime: fzFSMTime, WallTime: 1, Payload: p})
	}
	stored := func() string {
		var c shopTimeZoneCmd
		f.View(func(tx *bolt.Tx) error {
			if e, live := kv.NewTx(tx, f.Now(), 0).Get(keyShopTimeZone); live {
				json.Unmarshal(e.Value, &c)
			}
			return nil
		})
		return c.Zone
	}
	for _, c := range []struct {
		zone   string
		status int
		want   string
	}{
		{"Asia/Tokyo", 200, "Asia/Tokyo"},
		{"Mars/Olympus", 200, "Mars/Olympus"}, // well shaped: no box's database decides the log
		{"Local", 400, "Mars/Olympus"},
		{"", 400, "Mars/Olympus"},
		{"../../etc/passwd", 400, "Mars/Olympus"},
		{"America/Los_Angeles", 200, "America/Los_Angeles"},
	} {
		r := apply(shopTimeZoneCmd{Zone: c.zone, SetAt: 1})
		if r.Status != c.status || (c.status == 400 && r.Reason != "MALFORMED_COMMAND") {
			t.Errorf("zone %q: %+v, want %d", c.zone, r, c.status)
		}
		if got := stored(); got != c.want {
			t.Errorf("after %q the replica holds %q, want %q", c.zone, got, c.want)
		}
	}
	if r := apply(map[string]any{"zone": "Asia/Tokyo", "setAt": -1}); r.Status != 400 {
		t.Errorf("a negative stamp: %+v", r)
	}
}
