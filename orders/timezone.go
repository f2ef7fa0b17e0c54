package orders

import (
	"encoding/json"
	"errors"
	"regexp"
	"sync"
	"time"

	// The zone database in the binary: the image's read-only root may have
	// no /usr/share/zoneinfo, and a store in Tokyo must still print JST.
	// The system's database is used first when it has the zone.
	_ "time/tzdata"

	"masterorder/kv"
	"masterorder/raftfsm"
)

// The store's time zone: receipts and kitchen tickets print their time in
// it, a business day is cut and labelled in it (reports.go), and the
// staff and kitchen screens show times in it (the staff status carries
// it). The wizard writes it into every box's file ([shop] time_zone); a
// manager changes it from the console, which replicates it to every box
// through the log (CmdShopTimeZone), and the replicated value wins over
// the file. Neither set: the box's own zone (UTC on the image).
//
// Apply stays deterministic: the zone is a name in the command, checked by
// its shape only (valid), and stored as is; a name this box's zone
// database cannot load is ignored when reading (the file's zone, then the
// box's, stand in), never refused by some boxes and taken by others.

// CmdShopTimeZone sets the store's time zone from the console.
const CmdShopTimeZone raftfsm.CommandType = 123

// keyShopTimeZone holds the replicated setting (a shopTimeZoneCmd).
const keyShopTimeZone = "shop:timeZone"

// Where the zone in use comes from.
const (
	zoneFromConsole = "console" // the console's setting, replicated: wins
	zoneFromFile    = "file"    // [shop] time_zone, the wizard's
	zoneFromBox     = "box"     // neither: the box's own zone
)

type shopTimeZoneCmd struct {
	Zone string `json:"zone"`
	// SetAt is the proposer's wall clock (ms), shown on the console only.
	SetAt int64 `json:"setAt"`
}

func (c shopTimeZoneCmd) valid() bool { return validZoneName(c.Zone) && c.SetAt >= 0 }

func applyShopTimeZone(_ *raftfsm.ApplyContext, tx *kv.Tx, c shopTimeZoneCmd) ([]byte, error) {
	if err := tx.Put(keyShopTimeZone, mustJSON(c), 0); err != nil {
		return nil, err
	}
	return ok(c)
}

// zoneNameRe is the shape of an IANA zone name ("Asia/Tokyo", "UTC",
// "America/Argentina/Buenos_Aires", "Etc/GMT-9").
var zoneNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9][A-Za-z0-9_+-]*){0,2}$`)

// validZoneName checks a zone name's shape, not whether a zone database
// has it; "Local" (whatever zone the box runs in) is no store's zone.
func validZoneName(s string) bool {
	return len(s) <= 64 && s != "Local" && zoneNameRe.MatchString(s)
}

var errBadZone = errors.New(`must be a time zone name like "Asia/Tokyo"`)

// LoadZone is the zone named s, by the boxes' rule: an IANA name that
// the zone database built into the binary (or the system's) knows.
func LoadZone(s string) (*time.Location, error) {
	if !validZoneName(s) {
		return nil, errBadZone
	}
	if loc, ok := zoneCache.Load(s); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, errBadZone
	}
	zoneCache.Store(s, loc)
	return loc, nil
}

// zoneCache keeps loaded zones: time.LoadLocation reads and parses the
// database on every call.
var zoneCache sync.Map

// zoneSetting is the replicated setting on this box, nil when the console
// has not set one.
func (s *Service) zoneSetting() *shopTimeZoneCmd {
	e, live, err := s.node.KV().Get(keyShopTimeZone)
	if err != nil || !live {
		return nil
	}
	var c shopTimeZoneCmd
	if json.Unmarshal(e.Value, &c) != nil || !c.valid() {
		return nil
	}
	return &c
}

// storeZone is the store's time zone on this box, its name ("" when the
// box's own zone has none worth showing) and where it comes from.
func (s *Service) storeZone() (loc *time.Location, name, source string) {
	if c := s.zoneSetting(); c != nil {
		if loc, err := LoadZone(c.Zone); err == nil {
			return loc, c.Zone, zoneFromConsole
		}
	}
	if z := s.cfg.Shop.TimeZone; z != "" {
		if loc, err := LoadZone(z); err == nil {
			return loc, z, zoneFromFile
		}
	}
	return time.Local, boxZoneName(), zoneFromBox
}

// zone is the store's time zone on this box.
func (s *Service) zone() *time.Location {
	loc, _, _ := s.storeZone()
	return loc
}

// boxZoneName names the box's own zone when it has a name ("UTC" for a
// box without a zone, as the image runs).
func boxZoneName() string {
	if n := time.Local.String(); n != "Local" && validZoneName(n) {
		return n
	}
	if _, off := time.Now().In(time.Local).Zone(); off == 0 {
		return "UTC"
	}
	return ""
}
