package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The staff console edits an item's option groups and station: on a
// phone, a required group with two priced choices is added to an item
// that had none and saved (the owner types no ids: the group's and the
// choices' come from their English names); the guest API then answers it, and the other
// languages of the demo ramen's groups survive that ramen being saved.
func TestStaffEditsOptionGroups(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	if r := s.staff(n, "PUT", "/api/staff/menu/hakata", map[string]any{"name": "博多ラーメン", "nameEn": "Hakata ramen", "category": "noodles", "price": 950,
		"station": "noodles", "optionGroups": []any{map[string]any{"groupId": "firmness", "name": "麺のかたさ", "nameEn": "Noodle firmness",
			"names": map[string]string{"zh-Hans": "面的硬度"}, "min": 1, "max": 1, "options": []any{
				map[string]any{"optionId": "soft", "name": "やわらかめ", "nameEn": "Soft", "names": map[string]string{"ko": "부드럽게"}, "price": 0},
				map[string]any{"optionId": "firm", "name": "かため", "nameEn": "Firm", "price": 0}}}}}); r.status != 200 {
		t.Fatalf("PUT hakata: %d %s", r.status, r.body)
	}
	s.c.WaitConverged(10 * time.Second)

	st := b.open("staff", s.url((n+1)%3)+"/staff/", phoneW, phoneH)
	st.login()
	st.click(`#tabs button[data-tab="menu"]`)
	st.editMenuItem("kaedama")
	st.waitFor("the form filled", `!!document.querySelector('#menu-group-add')`, 5*time.Second)
	if got := eval[int](st, `document.querySelectorAll('#menu-options [data-group-row]').length`); got != 0 {
		t.Fatalf("kaedama shows %d groups", got)
	}
	set := func(sel, v string) {
		t.Helper()
		st.do(chromedp.SetValue(chromedp.CSS(sel), v))
	}
	set("#menu-station", "noodles")
	st.click("#menu-group-add")
	g := `#menu-options [data-group-row]:last-of-type`
	st.waitVisible(g)
	head := g + ` .option-group-head `
	st.typeInto(head+`[data-field="name"]`, "量")
	st.typeInto(head+`[data-field="nameEn"]`, "Portion")
	set(head+`[data-field="min"]`, "1")
	set(head+`[data-field="max"]`, "1")
	st.click(g + ` [data-action="add-option"]`)
	for i, o := range [][4]string{{"half", "半玉", "Half", "0"}, {"double", "二玉", "Double", "120"}} {
		row := g + ` [data-option-row]:nth-child(` + string(rune('1'+i)) + `) `
		st.typeInto(row+`[data-field="name"]`, o[1])
		st.typeInto(row+`[data-field="nameEn"]`, o[2])
		set(row+`[data-field="price"]`, o[3])
	}
	st.scrollBelowBars("#menu-options")
	st.screenshot("staff-menu-options-phone")
	st.viewport(tabletW, tabletH)
	st.scrollBelowBars("#menu-options")
	st.screenshot("staff-menu-options-tablet")
	st.viewport(768, 1024)
	st.scrollBelowBars("#menu-options")
	st.screenshot("staff-menu-options-768")
	// a mark on the groups as drawn now: the form drawn again after the
	// save (what the server answered) is without it
	eval[bool](st, `document.querySelector('#menu-option-groups').dataset.stale = '1'; true`)
	st.click("#menu-save")
	st.waitFor("saved and shown again", `!document.querySelector('#menu-option-groups[data-stale]') && [...document.querySelectorAll('#menu-options [data-group-row]')].map(e => e.dataset.id).join() === 'portion' && document.querySelector('#menu-error').hidden`, 15*time.Second)

	// The ramen, moved to another station through the form, keeps its
	// groups' other languages (the editor does not show them).
	st.editMenuItem("hakata")
	st.waitFor("hakata's group in the form", `document.querySelectorAll('#menu-options [data-group-row]').length === 1`, 5*time.Second)
	set("#menu-station", "ramen")
	st.click("#menu-save")

	type option struct {
		OptionID, Name, NameEn string
		Names                  map[string]string
		Price                  int
	}
	type item struct {
		MenuID, Station string
		OptionGroups    []struct {
			GroupID, Name, NameEn string
			Names                 map[string]string
			Min, Max              int
			Options               []option
		}
	}
	sess := s.openSession(n, "O1")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var menu struct{ Items []item }
		s.call((n+2)%3, "GET", "/api/guest/sessions/"+sess.SessionID+"/menu", map[string]string{"X-Session-PIN": sess.PIN}, nil).decode(t, &menu)
		var kae, hak item
		for _, it := range menu.Items {
			switch it.MenuID {
			case "kaedama":
				kae = it
			case "hakata":
				hak = it
			}
		}
		okKae := kae.Station == "noodles" && len(kae.OptionGroups) == 1 && kae.OptionGroups[0].GroupID == "portion" &&
			kae.OptionGroups[0].Name == "量" && kae.OptionGroups[0].NameEn == "Portion" && kae.OptionGroups[0].Min == 1 && kae.OptionGroups[0].Max == 1 &&
			len(kae.OptionGroups[0].Options) == 2
		if okKae {
			a, b := kae.OptionGroups[0].Options[0], kae.OptionGroups[0].Options[1]
			okKae = a.OptionID == "half" && a.Name == "半玉" && a.NameEn == "Half" && a.Price == 0 &&
				b.OptionID == "double" && b.Name == "二玉" && b.NameEn == "Double" && b.Price == 120
		}
		okHak := hak.Station == "ramen" && len(hak.OptionGroups) == 1 && hak.OptionGroups[0].Names["zh-Hans"] == "面的硬度" &&
			len(hak.OptionGroups[0].Options) == 2 && hak.OptionGroups[0].Options[0].Names["ko"] == "부드럽게"
		if okKae && okHak {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("guest menu: kaedama %+v, hakata %+v", kae, hak)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
