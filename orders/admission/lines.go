package admission

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of order-line options and notes (API.md "Menu: options, notes").
const (
	MaxOptionGroups = 8
	MaxGroupOptions = 16
	MaxNoteRunes    = 140
)

// FieldError is a 400 INVALID_ORDER that names the offending field
// (items[i].options.firmness, items[i].note), so the guest app can point
// at it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "invalid order: " + e.Field + ": " + e.Reason }

// Unwrap makes every FieldError an ErrInvalidOrder.
func (e *FieldError) Unwrap() error { return ErrInvalidOrder }

// FieldOf is the field an error names ("" when it names none).
func FieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// ValidNote: at most 140 characters, no control characters (a note is
// printed on paper and shown on the kitchen screen as one line).
func ValidNote(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxNoteRunes {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// checkLineExtras checks a line's options and note as sent: syntax and
// sizes only (which groups an item has is the catalog's, checked later).
func checkLineExtras(i int, l Line) error {
	if !ValidNote(l.Note) {
		return &FieldError{Field: fmt.Sprintf("items[%d].note", i), Reason: "at most 140 characters, no control characters"}
	}
	if len(l.Options) > MaxOptionGroups {
		return &FieldError{Field: fmt.Sprintf("items[%d].options", i), Reason: "too many groups"}
	}
	for _, g := range sortedKeys(l.Options) {
		field := fmt.Sprintf("items[%d].options.%s", i, g)
		if !ValidID(g) {
			return &FieldError{Field: fmt.Sprintf("items[%d].options", i), Reason: "bad group id"}
		}
		ids := l.Options[g]
		if len(ids) > MaxGroupOptions {
			return &FieldError{Field: field, Reason: "too many options"}
		}
		for j, id := range ids {
			if !ValidID(id) || slices.Contains(ids[:j], id) {
				return &FieldError{Field: field, Reason: "bad or repeated option id"}
			}
		}
	}
	return nil
}

// normalExtras is a line's options and note in canonical form: option ids
// sorted, empty groups dropped, the note trimmed (nil/"" when none).
func normalExtras(l Line) (map[string][]string, string) {
	var opts map[string][]string
	for g, ids := range l.Options {
		if len(ids) == 0 {
			continue
		}
		if opts == nil {
			opts = map[string][]string{}
		}
		s := slices.Clone(ids)
		sort.Strings(s)
		opts[g] = slices.Compact(s)
	}
	return opts, strings.TrimSpace(l.Note)
}

// extrasKey encodes options and note for the cart key and fingerprint;
// "" for a line with neither, so such a line hashes as it always did. The
// note is quoted: no note can imitate another line's encoding.
func extrasKey(opts map[string][]string, note string) string {
	if len(opts) == 0 && note == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("|o:")
	for _, g := range sortedKeys(opts) {
		b.WriteString(g + "=" + strings.Join(opts[g], "+") + ";")
	}
	b.WriteString("|n:" + strconv.Quote(note))
	return b.String()
}

// sortedKeys: map keys in a fixed order (Apply must not see map order).
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SortedGroups is the groups of a line's options in a fixed order.
func (l Line) SortedGroups() []string { return sortedKeys(l.Options) }
