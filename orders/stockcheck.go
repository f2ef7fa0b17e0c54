package orders

import "masterorder/orders/store"

// skusOf is the skus of a cart's needs, in their order, for the one stock
// statement an order makes (store.TakeStock).
func skusOf(need []skuUnits) []string {
	out := make([]string, len(need))
	for i, u := range need {
		out[i] = u.sku
	}
	return out
}

// unitsOf is the units of a cart's needs, in the order of skusOf.
func unitsOf(need []skuUnits) []int64 {
	out := make([]int64, len(need))
	for i, u := range need {
		out[i] = u.n
	}
	return out
}

// shortSKUs is the tracked skus that have fewer units than need asks,
// in need's order (the skus an OUT_OF_STOCK answer names).
func shortSKUs(q store.DB, need []skuUnits) ([]string, error) {
	levels, err := store.StockOf(q, skusOf(need))
	if err != nil {
		return nil, err
	}
	var short []string
	for _, u := range need {
		if qty, tracked := levels[u.sku]; tracked && qty < u.n {
			short = append(short, u.sku)
		}
	}
	return short, nil
}
