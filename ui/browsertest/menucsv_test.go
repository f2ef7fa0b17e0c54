package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chooseCSV gives the menu page's CSV input a file holding text.
func (tb *tab) chooseCSV(text string) {
	tb.t.Helper()
	p := filepath.Join(tb.t.TempDir(), "menu.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.do(chromedp.SetUploadFiles(chromedp.CSS("#menu-csv-file"), []string{p}))
}

// exportCSV taps the export button and returns the file the page made.
func (tb *tab) exportCSV() string {
	tb.t.Helper()
	eval[bool](tb, `(() => { window.__blob = null; const make = URL.createObjectURL; URL.createObjectURL = (b) => { window.__blob = b; return make.call(URL, b); }; return true; })()`)
	tb.click("#menu-csv-export")
	tb.waitFor("the exported file", `!!window.__blob`, 5*time.Second)
	// The bytes as written (Blob.text() would drop the BOM).
	return eval[string](tb, `window.__blob.arrayBuffer().then((b) => new TextDecoder('utf-8', { ignoreBOM: true }).decode(b))`)
}

// The owner's menu from a spreadsheet, on the staff page: a 40-row CSV
// with choices, toppings and allergens is previewed and goes in with one
// tap; a CSV with bad rows marks each of them, says what is wrong and
// imports nothing; an exported menu imported again changes nothing.
func TestStaffMenuCSV(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	st := b.open("staff", s.url(0)+"/staff/", tabletW, tabletH)
	st.login()
	st.click(`#tabs button[data-tab="menu"]`)
	st.waitVisible(`#menu-list tr[data-menu-id="shoyu"]`)
	before := len(s.menu(0))

	// Bad rows: each marked with its problem, nothing imported.
	st.chooseCSV("名前,価格,カテゴリ,選択肢,アレルギー\r\n" +
		"冷やし中華,950,noodles,,小麦、卵\r\n" +
		",300,,,\r\n" +
		"ざるそば,八百,noodles,,そば\r\n" +
		"冷やし中華,900,,,\r\n" +
		"天津飯,800,rice,ご飯の量 大盛り,\r\n" +
		"枝豆,300,sides,,グルテン\r\n")
	st.waitVisible("#menu-csv-preview")
	bad := eval[string](st, `[...document.querySelectorAll('#menu-csv-rows tr[data-state="bad"]')].map((tr) => tr.dataset.row + ': ' + tr.querySelector('.csv-state').textContent).join('\n')`)
	for _, want := range []string{"3: 名前がありません", "4: 価格は", "5: 同じ名前が 2 行目にもあります", "6: 選択肢「ご飯の量 大盛り」が読めません", "7: アレルギー「グルテン」がわかりません"} {
		if !strings.Contains(bad, want) {
			t.Errorf("the preview's bad rows:\n%s\nlack %q", bad, want)
		}
	}
	if !st.eval(`document.querySelector('#menu-csv-import').disabled && document.querySelector('#menu-csv-rows tr[data-row="2"]').dataset.state === 'new'`) {
		t.Error("import possible with bad rows, or row 2 not new")
	}
	docShotsBelow(st, "staff-menu-csv", "", "#menu-csv")
	st.click("#menu-csv-import") // disabled: nothing happens
	if n := len(s.menu(0)); n != before {
		t.Fatalf("a CSV with bad rows changed the menu: %d items, were %d", n, before)
	}
	st.click("#menu-csv-cancel")

	// 40 rows with choices, toppings and allergens: one tap.
	var csv strings.Builder
	csv.WriteString("name,price,category,options,allergens\r\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&csv, "Special ramen %d,\"%d\",specials,\"Noodles: soft, firm; Size (0-1): large +150; Toppings: 味玉 +120, Corn +80\",\"wheat, egg, soy\"\r\n", i, 1000+i)
	}
	st.chooseCSV(csv.String())
	st.waitFor("40 new rows", `document.querySelectorAll('#menu-csv-rows tr[data-state="new"]').length === 40 && !document.querySelector('#menu-csv-import').disabled`, 10*time.Second)
	st.scrollBelowBars("#menu-csv")
	st.screenshot("staff-menu-csv-preview")
	st.click("#menu-csv-import")
	st.waitFor("the list with 40 more", fmt.Sprintf(`document.querySelectorAll('#menu-list tr[data-menu-id]').length === %d && document.querySelector('#menu-csv-preview').hidden`, before+40), 20*time.Second)
	menu := s.menu(0)
	sp := menu["special-ramen-17"]
	if len(menu) != before+40 || sp.Price != 1017 || sp.Category != "specials" || fmt.Sprint(sp.Allergens) != "[wheat egg soy]" ||
		len(sp.OptionGroups) != 2 || sp.OptionGroups[1].Min != 0 || len(sp.Toppings) != 2 || sp.Toppings[0].ToppingID != "egg" {
		t.Fatalf("after the import: %d items, special-ramen-17 %+v", len(menu), sp)
	}

	// Export, then import what was exported: nothing to change.
	exported := st.exportCSV()
	if !strings.HasPrefix(exported, "\ufeff名前,価格,カテゴリ,選択肢,アレルギー\r\n") || !strings.Contains(exported, "Special ramen 40,1040,specials,") {
		t.Fatalf("the exported CSV:\n%.600s", exported)
	}
	st.chooseCSV(exported)
	st.waitFor("every row unchanged", fmt.Sprintf(`document.querySelectorAll('#menu-csv-rows tr[data-state="same"]').length === %d`, before+40), 10*time.Second)
	if !st.eval(`document.querySelector('#menu-csv-import').disabled`) {
		t.Error("an unchanged menu can be imported again")
	}
	// A changed price in the exported file: one row changed, imported.
	st.chooseCSV(strings.Replace(exported, "Special ramen 40,1040,", "Special ramen 40,1140,", 1))
	st.waitFor("one row changed", `document.querySelectorAll('#menu-csv-rows tr[data-state="change"]').length === 1`, 10*time.Second)
	st.click("#menu-csv-import")
	st.waitFor("imported", `document.querySelector('#menu-csv-preview').hidden`, 20*time.Second)
	if got := s.menu(0)["special-ramen-40"]; got.Price != 1140 {
		t.Errorf("special-ramen-40 after the second import: %+v", got)
	}
	if n := len(s.menu(0)); n != before+40 {
		t.Errorf("the round trip made new items: %d", n)
	}
}

type menuRow struct {
	MenuID, Name, Category string
	Price                  int
	Allergens              []string
	Toppings               []struct{ ToppingID string }
	OptionGroups           []struct {
		GroupID  string
		Min, Max int
	}
}

// menu is node i's menu by id.
func (s *store) menu(i int) map[string]menuRow {
	s.t.Helper()
	var out struct{ Items []menuRow }
	s.staff(i, "GET", "/api/staff/menu", nil).decode(s.t, &out)
	m := map[string]menuRow{}
	for _, it := range out.Items {
		m[it.MenuID] = it
	}
	return m
}
