package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// StockOf answers, in one statement, exactly what GetStock answers sku by
// sku: tracked skus with their quantity (zero included), untracked ones
// absent, for carts of every size.
func TestStockOfMatchesGetStock(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "s.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(tx); err != nil {
		t.Fatal(err)
	}
	var skus []string
	for i := range 50 {
		sku := fmt.Sprintf("sku%02d", i)
		skus = append(skus, sku)
		if i%3 != 0 { // every third untracked
			q := int64(i % 5) // some at zero
			if err := SetStock(tx, sku, &q); err != nil {
				t.Fatal(err)
			}
		}
	}
	for n := 0; n <= len(skus); n += 7 {
		got, err := StockOf(tx, skus[:n])
		if err != nil {
			t.Fatalf("%d skus: %v", n, err)
		}
		tracked := 0
		for _, sku := range skus[:n] {
			want, isTracked, err := GetStock(tx, sku)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := got[sku]
			if ok != isTracked || q != want {
				t.Errorf("%d skus: %s = %d,%v; GetStock %d,%v", n, sku, q, ok, want, isTracked)
			}
			if isTracked {
				tracked++
			}
		}
		if len(got) != tracked {
			t.Errorf("%d skus: %d answered, %d tracked", n, len(got), tracked)
		}
	}
	tx.Rollback()
}
