package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// line is one cart line as the guest API takes it.
type line struct {
	MenuID   string   `json:"menuId"`
	Quantity int      `json:"quantity"`
	Toppings []string `json:"toppings"`
}

// cartKey is the normalized cart the way the server fingerprints it: lines
// sorted, toppings sorted, identical lines summed.
func cartKey(lines []line) string {
	sum := map[string]int{}
	for _, l := range lines {
		tp := slices.Clone(l.Toppings)
		slices.Sort(tp)
		sum[l.MenuID+"|"+strings.Join(tp, ",")] += l.Quantity
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

// randomCart is 1–3 lines of distinct items, quantity 1–3, each topping
// with probability 0.4.
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
			total += unit * l.Quantity
		}
	}
	return total
}
