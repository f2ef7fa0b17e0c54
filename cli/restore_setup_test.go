package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/setup"
	"masterorder/setup/setuptest"
)

// allOrders is every order a box holds, as the kitchen lists them.
const allOrders = "/api/kitchen/orders?status=ACCEPTED,COOKING,READY,SERVED,CANCELLED"

// storeContents is what a restore must carry over: every menu item and
// every order, as the staff API answers them.
func storeContents(t *testing.T, c *http.Client, base string, auth map[string]string) (menu, orders []json.RawMessage) {
	t.Helper()
	var m struct{ Items []json.RawMessage }
	if code := jsonCall(t, c, "GET", base+"/api/staff/menu", auth, nil, &m); code != 200 {
		t.Fatalf("menu: %d", code)
	}
	var o struct{ Orders []json.RawMessage }
	if code := jsonCall(t, c, "GET", base+allOrders, auth, nil, &o); code != 200 {
		t.Fatalf("orders: %d", code)
	}
	return m.Items, o.Orders
}

// consoleBackup takes a backup as the console's Backups page does: make
// it (POST /api/staff/backups), download it, compare its digest.
func consoleBackup(t *testing.T, c *http.Client, base string, auth map[string]string) []byte {
	t.Helper()
	var made struct {
		File, SHA256, ShopID string
		Bytes                int64
		Index                uint64
	}
	if code := jsonCall(t, c, "POST", base+"/api/staff/backups", auth, map[string]any{}, &made); code != 200 || made.File == "" {
		t.Fatalf("make a backup: %d %+v", code, made)
	}
	req, _ := http.NewRequest("GET", base+"/api/staff/backups/"+made.File, nil)
	for k, v := range auth {
		req.Header.Set(k, v)
	}
	res, err := apitest.Client(t, c).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("download: %d %v", res.StatusCode, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != made.SHA256 || res.Header.Get("X-MasterOrder-Backup-Sha256") != made.SHA256 || int64(len(data)) != made.Bytes {
		t.Fatalf("downloaded %d bytes, digest %x; made %+v, header %q", len(data), sum, made, res.Header.Get("X-MasterOrder-Backup-Sha256"))
	}
	if made.Index == 0 || res.Header.Get("X-MasterOrder-Applied-Index") != strconv.FormatUint(made.Index, 10) {
		t.Fatalf("index: made %d, header %q", made.Index, res.Header.Get("X-MasterOrder-Applied-Index"))
	}
	return data
}

// TestRestoreStoreFromConsoleBackup: a store with menu items and orders;
// a backup taken through the console's endpoints (as the Backups page
// does); three blank boxes; the wizard's restore (the page's HTTP calls:
// send the file, then the usual form with "restore"); the restored store
// holds every order and menu item, takes the owner's new passwords, and
// takes new orders on every box.
func TestRestoreStoreFromConsoleBackup(t *testing.T) {
	c, svcs := cliStore(t, 3)
	li, _ := c.WaitLeader(10 * time.Second)
	ctx := context.Background()
	if _, _, err := svcs[li].SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	src := "http://" + c.Configs[(li+1)%3].HTTPAddr // a follower: the backup catches up first
	cl, err := staffClient(ctx, src, cliPassword)
	if err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + cl.token}
	guest := &http.Client{Timeout: 15 * time.Second}
	type table struct{ SessionID, Pin string }
	var tables []table
	for i := 0; i < 5; i++ { // one table each: a table orders one at a time
		var sess table
		if code := jsonCall(t, http.DefaultClient, "POST", src+"/api/staff/sessions", auth, map[string]string{"tableId": fmt.Sprintf("R%d", i)}, &sess); code != 200 {
			t.Fatalf("open table: %d", code)
		}
		hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("550e8400-e29b-41d4-a716-4466554400%02d", i), "X-MasterOrder-Client-Id": fmt.Sprintf("guest-restoretest-%d", i), "X-Session-PIN": sess.Pin}
		var order struct{ Allowed bool }
		if code := jsonCall(t, guest, "POST", src+"/api/guest/sessions/"+sess.SessionID+"/orders", hdr,
			map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1 + i%2}}}, &order); code != 200 || !order.Allowed {
			t.Fatalf("guest order %d: %d %+v", i, code, order)
		}
		tables = append(tables, sess)
	}
	wantMenu, wantOrders := storeContents(t, http.DefaultClient, src, auth)
	if len(wantMenu) == 0 || len(wantOrders) == 0 {
		t.Fatalf("the store to back up holds %d menu items and %d orders", len(wantMenu), len(wantOrders))
	}
	backup := consoleBackup(t, http.DefaultClient, src, auth)
	// Only the files the box made are served, by their names.
	for _, name := range []string{"masterorder-shop-1.mosnap", "..%2Fraft%2Fraft.db", "masterorder-shop-1.mosnap.partial"} {
		var r struct{ ReasonCode string }
		if code := jsonCall(t, http.DefaultClient, "GET", src+"/api/staff/backups/"+name, auth, nil, &r); code != 404 || r.ReasonCode != "BACKUP_NOT_FOUND" {
			t.Errorf("GET backups/%s: %d %s", name, code, r.ReasonCode)
		}
	}

	// The day every box is lost: three blank boxes.
	boxes := startSetupBoxes(t, 3, nil)
	base := "http://" + boxes[0].addr
	var refusal struct{ ReasonCode string }
	// Restore without a backup sent: refused by name.
	ids := []string{}
	for _, f := range listBoxes(t, boxes[0]) {
		ids = append(ids, f.ID)
	}
	form := setup.CreateRequest{Boxes: ids, ShopName: "Ramen Tanaka", ManagerPasswordHash: hashFor(t, setupManagerPW),
		KitchenPasswordHash: hashFor(t, setupKitchenPW), TaxRatePercent: 10, Restore: true}
	if code := jsonCall(t, http.DefaultClient, "POST", base+"/setup/api/create", nil, form, &refusal); code != 400 || refusal.ReasonCode != "RESTORE_NEEDS_BACKUP" {
		t.Fatalf("restore without a backup: %d %s", code, refusal.ReasonCode)
	}
	// A file that is not a backup, and a backup cut short, are refused.
	for name, body := range map[string][]byte{"not a backup": []byte("hello, this is a menu.csv"), "cut short": backup[:len(backup)/2]} {
		if code := upload(t, base, body, &refusal); code != 400 || refusal.ReasonCode != "BACKUP_INVALID" {
			t.Errorf("upload %s: %d %s", name, code, refusal.ReasonCode)
		}
	}
	var up setup.RestoreUpload
	if code := upload(t, base, backup, &up); code != 200 || up.Bytes != int64(len(backup)) || up.Index == 0 {
		t.Fatalf("upload the backup: %d %+v", code, up)
	}
	if st := jsonCall(t, http.DefaultClient, "POST", base+"/setup/api/create", nil, form, nil); st != 202 {
		t.Fatalf("create: %d", st)
	}
	p := waitWizard(t, boxes[0])
	if p.State != "done" || !p.Restore {
		t.Fatalf("restore: %+v", p)
	}

	tab := setuptest.TabletClient(t, base)
	for i, b := range boxes {
		https := "https://127.0.0.1:" + strconv.Itoa(b.httpsPort)
		var login struct{ Token string }
		// A login is a bcrypt check: slow on a loaded machine (race
		// detector), so a timed-out attempt is tried again; a refused
		// password is not.
		waitFor(t, fmt.Sprintf("box %d: a login with the password typed in the wizard", i), func() bool {
			code := jsonCall(t, tab, "POST", https+"/api/staff/login", nil, map[string]string{"password": setupManagerPW}, &login)
			if code != 0 && code != 200 && code != 503 {
				t.Fatalf("box %d: login with the password typed in the wizard: %d", i, code)
			}
			return code == 200
		})
		a := map[string]string{"Authorization": "Bearer " + login.Token}
		var menu, orders []json.RawMessage
		waitFor(t, fmt.Sprintf("box %d to hold the restored store", i), func() bool {
			menu, orders = storeContents(t, tab, https, a)
			return len(orders) == len(wantOrders)
		})
		if !sameJSON(menu, wantMenu) || !sameJSON(orders, wantOrders) {
			t.Errorf("box %d: restored %d menu items and %d orders, unlike the store backed up (%d, %d)", i, len(menu), len(orders), len(wantMenu), len(wantOrders))
		}
	}
	// The restored store takes orders: the open tables are still open
	// (their PINs too), on every box.
	for i, b := range boxes {
		hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("660e8400-e29b-41d4-a716-4466554400%02d", i), "X-MasterOrder-Client-Id": fmt.Sprintf("guest-restored-%d", i), "X-Session-PIN": tables[i].Pin}
		var order struct{ Allowed bool }
		waitFor(t, "a guest order on the restored store", func() bool {
			code := jsonCall(t, guest, "POST", "http://"+b.addr+"/api/guest/sessions/"+tables[i].SessionID+"/orders", hdr,
				map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1}}}, &order)
			return code == 200 && order.Allowed
		})
	}
}

func upload(t *testing.T, base string, body []byte, out any) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/setup/api/restore", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := apitest.Client(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	json.Unmarshal(raw, out)
	return res.StatusCode
}

// waitWizard follows the wizard of box b until it is done or failed.
func waitWizard(t *testing.T, b *setupBox) setup.Progress {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var p setup.Progress
	for time.Now().Before(deadline) {
		if jsonCall(t, &http.Client{Timeout: 3 * time.Second}, "GET", "http://"+b.addr+"/setup/api/progress", nil, nil, &p) == 200 &&
			(p.State == "done" || p.State == "failed") {
			return p
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("wizard never finished: %+v", p)
	return p
}

func sameJSON(a, b []json.RawMessage) bool {
	norm := func(l []json.RawMessage) []any {
		var out []any
		for _, r := range l {
			var v any
			json.Unmarshal(r, &v)
			out = append(out, v)
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
