package orders_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/menuimage"
)

// photo draws a w×h picture that compresses like a photograph (smooth
// shapes and a little grain), different for every seed.
func photo(w, h int, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fx, fy, ph := 2+r.Float64()*6, 2+r.Float64()*6, r.Float64()*6
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			u, v := float64(x)/float64(w), float64(y)/float64(h)
			g := uint8(r.IntN(12))
			img.Set(x, y, color.RGBA{
				R: uint8(120+100*math.Sin(fx*u+ph)) + g,
				G: uint8(110+90*math.Cos(fy*v+ph)) + g,
				B: uint8(100+80*math.Sin(fx*u*fy*v)) + g, A: 255})
		}
	}
	return img
}

func jpegOf(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pngOf(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (s *store) putImage(i int, menuID, contentType string, data []byte) resp {
	s.t.Helper()
	return s.do(i, "PUT", "/api/staff/menu/"+menuID+"/image", map[string]string{"Authorization": "Bearer " + s.token, "Content-Type": contentType}, data)
}

type contentView struct {
	MenuID        string            `json:"menuId"`
	Names         map[string]string `json:"names"`
	Description   string            `json:"description"`
	DescriptionEn string            `json:"descriptionEn"`
	Allergens     []string          `json:"allergens"`
	ImageURL      *string           `json:"imageUrl"`
	Available     bool              `json:"available"`
}

func (s *store) menuItem(i int, menuID string) contentView {
	s.t.Helper()
	var out struct{ Items []contentView }
	s.mustStaff(i, "GET", "/api/staff/menu", nil).json(s.t, &out)
	for _, it := range out.Items {
		if it.MenuID == menuID {
			return it
		}
	}
	s.t.Fatalf("no item %s on node %d", menuID, i)
	return contentView{}
}

// Bad content is refused with the field it is about and writes nothing;
// a client that does not send the content fields (the kitchen's sold-out
// toggle) keeps them.
func TestMenuContentBadInputWritesNothing(t *testing.T) {
	s := startStore(t, 1, nil)
	good := map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900,
		"names": map[string]string{"zh-hans": "酱油拉面", "ko": "쇼유 라멘"}, "description": "鶏ガラと魚介のWスープ",
		"descriptionEn": "Chicken and seafood broth", "allergens": []string{"soy", "wheat", "egg"}}
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", good)
	want := s.menuItem(0, "ramen")
	if want.Names["zh-Hans"] != "酱油拉面" || want.Names["ko"] != "쇼유 라멘" || len(want.Names) != 2 {
		t.Fatalf("names not canonical: %v", want.Names)
	}
	if fmt.Sprint(want.Allergens) != "[wheat egg soy]" || want.Description != "鶏ガラと魚介のWスープ" {
		t.Fatalf("content %+v", want)
	}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"unknown allergen", with("allergens", []string{"wheat", "gluten"}), "allergens"},
		{"allergen twice", with("allergens", []string{"egg", "egg"}), "allergens"},
		{"bad language tag", with("names", map[string]string{"zh_Hans!": "酱油拉面"}), "names.zh_Hans!"},
		{"two tags, one language", with("names", map[string]string{"zh-Hans": "a", "zh-hans": "b"}), "names.zh-hans"},
		{"empty name", with("names", map[string]string{"ko": " "}), "names.ko"},
		{"control character", with("description", "スープ\x07"), "description"},
		{"too long", with("descriptionEn", string(bytes.Repeat([]byte("a"), 501))), "descriptionEn"},
	} {
		r := s.staff(0, "PUT", "/api/staff/menu/ramen", tc.body)
		var e struct{ ReasonCode, Field string }
		json.Unmarshal(r.Body, &e)
		if r.Status != 400 || e.ReasonCode != "INVALID_MENU_ITEM" || e.Field != tc.field {
			t.Errorf("%s: %d %s, want 400 INVALID_MENU_ITEM field %q", tc.name, r.Status, r.Body, tc.field)
		}
	}
	if got := s.menuItem(0, "ramen"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a refused PUT changed the item: %+v, was %+v", got, want)
	}

	pic := jpegOf(t, photo(64, 48, 1))
	bomb := pngOf(t, image.NewGray(image.Rect(0, 0, 1, 1)))
	// The same 1×1 PNG claiming a 20000×20000 canvas (its IHDR's CRC
	// is left wrong: DecodeConfig reads the size before checking it, the
	// size is what must be refused first).
	bomb = append([]byte(nil), bomb...)
	copy(bomb[16:24], []byte{0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20})
	for _, tc := range []struct {
		name, ct string
		data     []byte
		field    string
	}{
		{"PNG claiming JPEG", "image/jpeg", pngOf(t, photo(32, 32, 2)), "image"},
		{"text claiming PNG", "image/png", []byte("<script>alert(1)</script>"), "image"},
		{"truncated JPEG", "image/jpeg", pic[:len(pic)/3], "image"},
		{"too big", "image/jpeg", append(append([]byte(nil), pic...), make([]byte, 256<<10)...), "image"},
		{"huge canvas", "image/png", bomb, "image"},
		{"not a picture type", "image/svg+xml", []byte("<svg/>"), "contentType"},
		{"empty", "image/jpeg", nil, "image"},
	} {
		r := s.putImage(0, "ramen", tc.ct, tc.data)
		var e struct{ ReasonCode, Field string }
		json.Unmarshal(r.Body, &e)
		if r.Status != 400 || e.ReasonCode != "INVALID_IMAGE" || e.Field != tc.field {
			t.Errorf("%s: %d %s, want 400 INVALID_IMAGE field %q", tc.name, r.Status, r.Body, tc.field)
		}
	}
	if r := s.putImage(0, "nosuch", "image/jpeg", pic); r.Status != 404 || r.reason(t) != "MENU_ITEM_NOT_FOUND" {
		t.Errorf("picture of an unknown item: %d %s", r.Status, r.Body)
	}
	if got := s.menuItem(0, "ramen"); got.ImageURL != nil {
		t.Fatalf("a refused picture was stored: %v", *got.ImageURL)
	}

	// The kitchen's sold-out toggle sends the item without its words.
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900, "available": false})
	got := s.menuItem(0, "ramen")
	got.Available = true
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a PUT without content fields changed them: %+v, was %+v", got, want)
	}
	// Explicit empty values clear them.
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", with("allergens", []string{}))
	if got := s.menuItem(0, "ramen"); len(got.Allergens) != 0 || got.Description == "" {
		t.Fatalf("allergens not cleared alone: %+v", got)
	}
}

// fetchImage reads a picture from node i, retrying while that box has not
// applied the upload (a bounded wait; the invariant is the bytes).
func (s *store) fetchImage(i int, url string) resp {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.do(i, "GET", url, nil, nil)
		if r.Status == 200 || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A picture uploaded through a follower is re-encoded, stored once in the
// replicated state and served byte-identical (with a cache-forever ETag)
// by every box, after a snapshot install on a box that was away and after
// every box restarted.
func TestMenuImagesReplicatedThroughSnapshotsAndRestarts(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Raft.SnapshotThreshold = 64
		c.Raft.TrailingLogs = 32
		c.Raft.SnapshotInterval = node.Duration{Duration: 100 * time.Millisecond}
	})
	s.seedMenu()
	fi, _ := s.c.Follower()
	// A JPEG with a payload after its end: re-encoding must drop it.
	upload := append(jpegOf(t, photo(1200, 900, 3)), []byte("<script>alert(1)</script>")...)
	r := s.putImage(fi, "ramen", "image/jpeg", upload)
	if r.Status != 200 {
		t.Fatalf("upload through follower %d: %d %s", fi, r.Status, r.Body)
	}
	var item contentView
	r.json(t, &item)
	if item.ImageURL == nil {
		t.Fatalf("no imageUrl: %s", r.Body)
	}
	url := *item.ImageURL
	var served []byte
	for i := range s.c.Nodes {
		r := s.fetchImage(i, url)
		if r.Status != 200 {
			t.Fatalf("node %d: %d %s", i, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); ct != "image/jpeg" {
			t.Errorf("node %d Content-Type %q", i, ct)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("node %d Cache-Control %q", i, cc)
		}
		if i == 0 {
			served = r.Body
		} else if !bytes.Equal(r.Body, served) {
			t.Fatalf("node %d serves other bytes than node 0", i)
		}
		if hash := menuimage.Hash(r.Body); url != "/api/images/"+hash || r.Header.Get("ETag") != `"`+hash+`"` {
			t.Fatalf("node %d: url %s, ETag %s, content hash %s", i, url, r.Header.Get("ETag"), hash)
		}
		if nm := s.do(i, "GET", url, map[string]string{"If-None-Match": r.Header.Get("ETag")}, nil); nm.Status != 304 {
			t.Errorf("node %d If-None-Match: %d", i, nm.Status)
		}
	}
	if bytes.Contains(served, []byte("<script>")) || bytes.Equal(served, upload) {
		t.Fatal("the upload reached the phone as it was sent")
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(served))
	if err != nil || cfg.Width != menuimage.MaxShownSide || cfg.Height != 600 {
		t.Fatalf("served picture %dx%d (%v), want scaled to 800x600", cfg.Width, cfg.Height, err)
	}

	// A follower away while the log moves on and is compacted gets the
	// picture from a snapshot install.
	away := (fi + 1) % 3
	if li, _ := s.c.WaitLeader(10 * time.Second); li == away {
		away = (fi + 2) % 3
	}
	s.c.StopNode(away)
	second := jpegOf(t, photo(300, 300, 4))
	if r := s.putImage(s.running(away+1), "gyoza", "image/jpeg", second); r.Status != 200 {
		t.Fatalf("second upload: %d %s", r.Status, r.Body)
	}
	for i := 0; i < 120; i++ { // past SnapshotThreshold + TrailingLogs
		s.mustStaff(s.running(away+1+i%2), "PUT", "/api/staff/stock/tea", map[string]any{"quantity": i})
	}
	_, leader := s.c.WaitLeader(10 * time.Second)
	if err := leader.Raft().Snapshot().Error(); err != nil {
		t.Logf("leader snapshot: %v", err)
	}
	var restored atomic.Uint64
	setup := s.c.Setup
	s.c.Setup = func(i int, nd *node.Node) {
		setup(i, nd)
		if i == away {
			nd.FSM().SetRestoreListener(func(applied uint64) { restored.Store(applied) })
		}
	}
	s.c.StartNode(away)
	gyoza := s.menuItemEventually(away, "gyoza")
	for _, u := range []string{url, gyoza} {
		r := s.fetchImage(away, u)
		if r.Status != 200 || menuimage.Hash(r.Body) != u[len("/api/images/"):] {
			t.Fatalf("node %d after catching up: %s %d", away, u, r.Status)
		}
	}
	if restored.Load() == 0 {
		t.Fatalf("node %d caught up without a snapshot install (the test did not test it)", away)
	}
	s.c.AssertIdentical(60 * time.Second)

	// Every box restarts from its files.
	s.c.StopAll()
	s.c.Setup = setup
	for i := range s.c.Configs {
		s.c.StartNode(i)
	}
	s.c.WaitLeader(30 * time.Second)
	for i := range s.c.Nodes {
		if r := s.fetchImage(i, url); r.Status != 200 || !bytes.Equal(r.Body, served) {
			t.Fatalf("node %d after restart: %d", i, r.Status)
		}
	}
	// Replacing a picture drops the old one from the replicated state.
	s.token = s.login(0)
	if r := s.staff(0, "DELETE", "/api/staff/menu/ramen/image", nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	s.c.WaitConverged(30 * time.Second)
	for i := range s.c.Nodes {
		if r := s.do(i, "GET", url, nil, nil); r.Status != 404 {
			t.Fatalf("node %d still serves a deleted picture: %d", i, r.Status)
		}
	}
	s.c.AssertIdentical(60 * time.Second)
}

// menuItemEventually waits until node i knows the item's picture.
func (s *store) menuItemEventually(i int, menuID string) string {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var out struct{ Items []contentView }
		if r := s.staff(i, "GET", "/api/staff/menu", nil); r.Status == 200 {
			r.json(s.t, &out)
			for _, it := range out.Items {
				if it.MenuID == menuID && it.ImageURL != nil {
					return *it.ImageURL
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("node %d: no picture for %s within 60 s", i, menuID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFiguresMenuPictures measures the snapshot and restarts with a
// 100-item menu of pictures (MO_FIGURES=1 go test -run
// TestFiguresMenuPictures -v ./orders/).
func TestFiguresMenuPictures(t *testing.T) {
	if os.Getenv("MO_FIGURES") == "" {
		t.Skip("set MO_FIGURES=1 to measure")
	}
	s := startStore(t, 3, nil)
	var stored int64
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("item%03d", i)
		s.mustStaff(i%3, "PUT", "/api/staff/menu/"+id, map[string]any{"name": fmt.Sprintf("品目%d", i), "nameEn": "item", "category": "c", "price": 500 + i,
			"names": map[string]string{"zh-Hans": "菜品", "ko": "메뉴"}, "description": "鶏ガラと魚介のWスープ", "allergens": []string{"wheat", "soy"}})
		r := s.putImage(i%3, id, "image/jpeg", jpegOf(t, photo(1024, 768, uint64(i)+10)))
		if r.Status != 200 {
			t.Fatalf("upload %d: %d %s", i, r.Status, r.Body)
		}
		var it contentView
		r.json(t, &it)
		stored += int64(len(s.fetchImage(i%3, *it.ImageURL).Body))
	}
	t.Logf("100 items with pictures (1024x768 JPEG uploads, stored at 800x600): %v; pictures %.1f KiB on average", time.Since(t0).Round(time.Millisecond), float64(stored)/100/1024)
	s.c.WaitConverged(30 * time.Second)
	var w countingWriter
	t1 := time.Now()
	if err := s.c.Nodes[0].FSM().WriteSnapshot(&w); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot: %.1f MiB, written in %v", float64(w.n)/(1<<20), time.Since(t1).Round(time.Millisecond))
	for i, n := range s.c.Nodes {
		if err := n.Raft().Snapshot().Error(); err != nil {
			t.Logf("snapshot on node %d: %v", i, err)
		}
	}
	fi, _ := s.c.Follower()
	t.Logf("follower restart to /readyz 200: %v", s.c.RestartTimed(fi).Round(time.Millisecond))
	s.c.StopNode(fi)
	for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal", "domain.sqlite-shm"} {
		os.Remove(filepath.Join(s.c.Configs[fi].DataDir, "fsm", name))
	}
	t.Logf("follower rebuild from snapshot + log to /readyz 200: %v", s.c.RestartTimed(fi).Round(time.Millisecond))
	s.c.AssertIdentical(60 * time.Second)
}
