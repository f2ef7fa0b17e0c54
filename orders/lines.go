package orders

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/admission"
	"masterorder/orders/store"
)

// Order lines (issue 16): option groups with required choices, line
// notes, the station that prepares each item, ticket numbers. Options and
// the note are part of the normalized cart (admission/lines.go), so of the
// payload fingerprint; they are priced and checked against the menu inside
// Apply like toppings.

type optionInput struct {
	OptionID string            `json:"optionId"`
	Name     string            `json:"name"`
	NameEn   string            `json:"nameEn"`
	Names    map[string]string `json:"names"`
	Price    *int64            `json:"price"`
}

type optionGroupInput struct {
	GroupID string            `json:"groupId"`
	Name    string            `json:"name"`
	NameEn  string            `json:"nameEn"`
	Names   map[string]string `json:"names"`
	Min     int               `json:"min"`
	Max     *int              `json:"max"`
	Options []optionInput     `json:"options"`
}

// menuLinesInput is the part of a menu item body that order lines add.
type menuLinesInput struct {
	Station      string             `json:"station"`
	OptionGroups []optionGroupInput `json:"optionGroups"`
}

// applyLines copies station and option groups into item; a bad one is
// named by the field it answers (400 INVALID_MENU_ITEM).
func (in menuLinesInput) applyLines(item *store.MenuItem) (field string) {
	item.Station = in.Station
	if item.Station == "" {
		item.Station = store.DefaultStation
	}
	if !stationRe.MatchString(item.Station) {
		return "station"
	}
	if len(in.OptionGroups) > admission.MaxOptionGroups {
		return "optionGroups"
	}
	item.OptionGroups = []store.OptionGroup{}
	for i, g := range in.OptionGroups {
		f := fmt.Sprintf("optionGroups[%d]", i)
		max := len(g.Options)
		if g.Max != nil {
			max = *g.Max
		}
		names, field, ok := optionNames(g.Names, f+".names")
		if !ok {
			return field
		}
		og := store.OptionGroup{GroupID: g.GroupID, Name: g.Name, NameEn: g.NameEn, Names: names, Min: g.Min, Max: max, Options: []store.Option{}}
		for j, o := range g.Options {
			of := fmt.Sprintf("%s.options[%d]", f, j)
			if o.Price == nil {
				return of + ".price"
			}
			names, field, ok := optionNames(o.Names, of+".names")
			if !ok {
				return field
			}
			og.Options = append(og.Options, store.Option{OptionID: o.OptionID, Name: o.Name, NameEn: o.NameEn, Names: names, Price: *o.Price})
		}
		item.OptionGroups = append(item.OptionGroups, og)
		if sub := badGroup(og, item.OptionGroups[:i]); sub != "" {
			return f + sub
		}
	}
	return ""
}

// optionNames canonicalizes a group's or option's names; none (or an
// empty map) stays nil, so the stored JSON of a group without extra
// languages is byte for byte what it was before names existed.
func optionNames(in map[string]string, field string) (store.Names, string, bool) {
	if len(in) == 0 {
		return nil, "", true
	}
	return canonicalNames(in, field)
}

// badGroup names what is wrong with g ("" if nothing), given the groups
// before it. Used by the handler and by the command's own check.
func badGroup(g store.OptionGroup, before []store.OptionGroup) string {
	if !admission.ValidID(g.GroupID) || slices.ContainsFunc(before, func(b store.OptionGroup) bool { return b.GroupID == g.GroupID }) {
		return ".groupId"
	}
	if !validText(g.Name, maxNameLen, true) {
		return ".name"
	}
	if !validText(g.NameEn, maxNameLen, false) {
		return ".nameEn"
	}
	if !validNames(g.Names) {
		return ".names"
	}
	if len(g.Options) < 1 || len(g.Options) > admission.MaxGroupOptions {
		return ".options"
	}
	if g.Min < 0 || g.Max < g.Min || g.Max < 1 || g.Min > len(g.Options) {
		return ".min"
	}
	for j, o := range g.Options {
		f := fmt.Sprintf(".options[%d]", j)
		if !admission.ValidID(o.OptionID) || slices.ContainsFunc(g.Options[:j], func(p store.Option) bool { return p.OptionID == o.OptionID }) {
			return f + ".optionId"
		}
		if !validText(o.Name, maxNameLen, true) || !validText(o.NameEn, maxNameLen, false) {
			return f + ".name"
		}
		if !validNames(o.Names) {
			return f + ".names"
		}
		if o.Price < 0 || o.Price > maxPriceYen {
			return f + ".price"
		}
	}
	return ""
}

// validMenuLines is upsertMenuCmd's check of the fields order lines add
// (empty station: a command from a build before them).
func validMenuLines(m store.MenuItem) bool {
	if m.Station != "" && !stationRe.MatchString(m.Station) || len(m.OptionGroups) > admission.MaxOptionGroups {
		return false
	}
	for i, g := range m.OptionGroups {
		if badGroup(g, m.OptionGroups[:i]) != "" {
			return false
		}
	}
	return true
}

// optionsField checks a line's options against its item: only known
// groups and options, every required group chosen, at most max each. It
// names the first bad field as items[i].options.<group> ("" when fine).
func optionsField(m store.MenuItem, l admission.Line, i int) string {
	for _, g := range l.SortedGroups() {
		ids := l.Options[g]
		gi := slices.IndexFunc(m.OptionGroups, func(og store.OptionGroup) bool { return og.GroupID == g })
		if gi < 0 {
			if len(ids) == 0 {
				continue // an empty choice of nothing
			}
			return fmt.Sprintf("items[%d].options.%s", i, g)
		}
		og := m.OptionGroups[gi]
		for _, id := range ids {
			if !slices.ContainsFunc(og.Options, func(o store.Option) bool { return o.OptionID == id }) {
				return fmt.Sprintf("items[%d].options.%s", i, g)
			}
		}
		if len(ids) > og.Max {
			return fmt.Sprintf("items[%d].options.%s", i, g)
		}
	}
	for _, og := range m.OptionGroups {
		if len(l.Options[og.GroupID]) < og.Min {
			return fmt.Sprintf("items[%d].options.%s", i, og.GroupID)
		}
	}
	return ""
}

// cartOptionsField is optionsField over a cart (unknown items are left
// to the menu check).
func cartOptionsField(menu map[string]store.MenuItem, lines []admission.Line) string {
	for i, l := range lines {
		if m, found := menu[l.MenuID]; found {
			if f := optionsField(m, l, i); f != "" {
				return f
			}
		}
	}
	return ""
}

// guestLineField renumbers a field Apply named (items[k]…, k a line of
// the normalized cart) by the guest's own lines: the first line as sent
// that went into line k. Apply judges options only when this node's
// catalog did not see the problem, i.e. the menu changed a moment ago.
func guestLineField(field string, lines, asSent []admission.Line) string {
	rest, ok := strings.CutPrefix(field, "items[")
	end := strings.IndexByte(rest, ']')
	if !ok || end < 0 {
		return field
	}
	k, err := strconv.Atoi(rest[:end])
	if err != nil || k < 0 || k >= len(lines) {
		return field
	}
	key := admission.LineKey(lines[k])
	for j, l := range asSent {
		if admission.LineKey(l) == key {
			return fmt.Sprintf("items[%d%s", j, rest[end:])
		}
	}
	return field
}

// addLineExtras puts station, priced options (in the menu's order) and
// the note on a priced line whose options passed optionsField.
func addLineExtras(m store.MenuItem, l admission.Line, item *store.OrderItem) {
	item.Station = m.Station
	if item.Station == "" {
		item.Station = store.DefaultStation
	}
	item.Options = []store.OptionRef{}
	for _, og := range m.OptionGroups {
		chosen := l.Options[og.GroupID]
		for _, o := range og.Options {
			if slices.Contains(chosen, o.OptionID) {
				item.Options = append(item.Options, store.OptionRef{GroupID: og.GroupID, OptionID: o.OptionID, Name: o.Name, Price: o.Price})
				item.UnitPrice += o.Price
			}
		}
	}
	if l.Note != "" {
		n := l.Note
		item.Note = &n
	}
}

// validLineExtras is placeOrderCmd's check of a normalized line's options
// and note.
func validLineExtras(l admission.Line) bool {
	if !admission.ValidNote(l.Note) || len(l.Options) > admission.MaxOptionGroups {
		return false
	}
	for _, g := range l.SortedGroups() {
		ids := l.Options[g]
		if !admission.ValidID(g) || len(ids) > admission.MaxGroupOptions {
			return false
		}
		for _, id := range ids {
			if !admission.ValidID(id) {
				return false
			}
		}
	}
	return true
}

// withField adds the field a rejection names to an encoded Result:
// withField(reject(...))(field).
func withField(out []byte, err error) func(field string) ([]byte, error) {
	return func(field string) ([]byte, error) {
		if err != nil {
			return out, err
		}
		var r Result
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, err
		}
		r.Field = field
		return json.Marshal(r)
	}
}

// failField answers a 400 that names the offending field.
func (s *Service) failField(c echo.Context, status int, code, field string) error {
	return httpapi.Write(c, httpapi.Refusal{Status: status, Code: code, Field: field})
}
