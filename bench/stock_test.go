package bench

import (
	"testing"
	"time"
)

// The staff API refuses stock quantities above 1,000,000 (400
// INVALID_STOCK): a big run must not ask for more, or setup fails.
func TestStockQuantityWithinServerLimit(t *testing.T) {
	for _, cfg := range []Config{
		{Tables: 256, GuestsPerTable: 1, Duration: 20 * time.Second},
		{Tables: 1000, GuestsPerTable: 4, OrdersPerGuest: 30},
		{Tables: 1, GuestsPerTable: 1, OrdersPerGuest: 1},
	} {
		q := newRunner(cfg).stockQuantity()
		if q > maxStockQuantity || q < 100000 {
			t.Errorf("%d tables × %d guests × %d orders: stock %d, want 100000..%d", cfg.Tables, cfg.GuestsPerTable, cfg.OrdersPerGuest, q, maxStockQuantity)
		}
	}
}
