package orders

// skusOf is the skus of a cart's needs, in their order, for the one stock
// query an order makes (store.StockOf).
func skusOf(need []skuUnits) []string {
	out := make([]string, len(need))
	for i, u := range need {
		out[i] = u.sku
	}
	return out
}
