package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// line is one cart line as the guest API takes it.
type line struct {
	MenuID   string              `json:"menuId"`
	Quantity int                 `json:"quantity"`
	Toppings []string            `json:"toppings"`
	Options  map[string][]string `json:"options,omitempty"`
	Note     string              `json:"note,omitempty"`
}

// cartKey is the normalized cart the way the server fingerprints it: lines
// sorted, toppings sorted, options and the note included, identical lines
// summed.
func cartKey(lines []line) string {
	sum := map[string]int{}
	for _, l := range lines {
		tp := slices.Clone(l.Toppings)
		slices.Sort(tp)
		sum[l.MenuID+"|"+strings.Join(tp, ",")+extrasKey(l)] += l.Quantity
	}
	keys := make([]string, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('x')
		b.WriteString(strconv.Itoa(sum[k]))
		b.WriteByte(';')
	}
	return b.String()
}

// extrasKey is a line's options (groups and ids sorted) and note ("" when
// it has neither).
func extrasKey(l line) string {
	groups := make([]string, 0, len(l.Options))
	for g, ids := range l.Options {
		if len(ids) == 0 {
			continue
		}
		s := slices.Clone(ids)
		slices.Sort(s)
		groups = append(groups, g+"="+strings.Join(s, "+"))
	}
	note := strings.TrimSpace(l.Note)
	if len(groups) == 0 && note == "" {
		return ""
	}
	slices.Sort(groups)
	return "|o:" + strings.Join(groups, ";") + "|n:" + strconv.Quote(note)
}

// notes are what guests write on a line.
var notes = []string{"ネギ抜き", "麺かため", "辛さ控えめ", "no onions", "アレルギー: ごま"}

// randomCart is 1–3 lines of distinct items, quantity 1–3, each topping
// with probability 0.4, every required option group chosen (optional ones
// half the time, up to max), a note on one line in four.
func randomCart(rng *rand.Rand, items []menuItem) []line {
	n := 1 + rng.IntN(3)
	perm := rng.Perm(len(items))[:n]
	lines := make([]line, 0, n)
	for _, i := range perm {
		it := items[i]
		l := line{MenuID: it.ID, Quantity: 1 + rng.IntN(3), Toppings: []string{}}
		for _, tp := range it.Toppings {
			if rng.Float64() < 0.4 {
				l.Toppings = append(l.Toppings, tp.ID)
			}
		}
		for _, g := range it.Groups {
			k := g.Min
			if k < g.Max && (k == 0 && rng.Float64() < 0.5 || k > 0) {
				k += rng.IntN(g.Max - k + 1)
			}
			for _, o := range rng.Perm(len(g.Options))[:k] {
				if l.Options == nil {
					l.Options = map[string][]string{}
				}
				l.Options[g.ID] = append(l.Options[g.ID], g.Options[o].ID)
			}
		}
		if rng.Float64() < 0.25 {
			l.Note = notes[rng.IntN(len(notes))]
		}
		lines = append(lines, l)
	}
	return lines
}

// cartTotal is the price the guest sees: (item + toppings) × quantity.
func cartTotal(lines []line, items []menuItem) int {
	total := 0
	for _, l := range lines {
		for _, it := range items {
			if it.ID != l.MenuID {
				continue
			}
			unit := it.Price
			for _, id := range l.Toppings {
				for _, tp := range it.Toppings {
					if tp.ID == id {
						unit += tp.Price
					}
				}
			}
			for _, g := range it.Groups {
				for _, o := range g.Options {
					if slices.Contains(l.Options[g.ID], o.ID) {
						unit += o.Price
					}
				}
			}
			total += unit * l.Quantity
		}
	}
	return total
}
