package browsertest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"masterorder/node/nodetest"
	"masterorder/orders/orderstest"
	"masterorder/setup/setuptest"
)

const (
	restoreManagerPW = "tonkotsu-2026-again"
	restoreKitchenPW = "kitchen screen 88"
)

// blankBox is `masterorder run` with no configuration: setup mode, as a
// freshly written card boots, on loopback with its own ports.
type blankBox struct {
	addr      string // the setup page, then the member's HTTP
	httpsPort int
	cmd       *exec.Cmd
}

// startBlankBoxes starts n boxes in setup mode that find each other by
// --probe; each is stopped when the test ends.
func startBlankBoxes(t *testing.T, n int) []*blankBox {
	t.Helper()
	bin := masterorderBinary(t)
	boxes := make([]*blankBox, n)
	var addrs []string
	for i := range boxes {
		boxes[i] = &blankBox{addr: "127.0.0.1:" + strconv.Itoa(nodetest.FreePort(t)), httpsPort: nodetest.FreePort(t)}
		addrs = append(addrs, boxes[i].addr)
	}
	for i, b := range boxes {
		dir := t.TempDir()
		for _, d := range []string{"etc", "state", "boot", "sys"} {
			os.MkdirAll(filepath.Join(dir, d), 0o755)
		}
		logf, err := os.Create(filepath.Join(dir, "box.log"))
		if err != nil {
			t.Fatal(err)
		}
		b.cmd = exec.Command(bin, "run", "--etc-dir", filepath.Join(dir, "etc"), "--state-dir", filepath.Join(dir, "state"),
			"--boot-dir", filepath.Join(dir, "boot"), "--sys-root", filepath.Join(dir, "sys"), "--listen", b.addr,
			"--https-port", strconv.Itoa(b.httpsPort), "--raft-port", strconv.Itoa(nodetest.FreePort(t)),
			"--window-from-start", "--mdns=false", "--probe", strings.Join(addrs, ","))
		b.cmd.Stdout, b.cmd.Stderr = logf, logf
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := b.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logf.Close()
		t.Cleanup(func() {
			syscall.Kill(-b.cmd.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { b.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			if t.Failed() {
				if log, err := os.ReadFile(filepath.Join(dir, "box.log")); err == nil {
					t.Logf("box %d's log:\n%s", i, log)
				}
			}
		})
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	for _, b := range boxes {
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := hc.Get("http://" + b.addr + "/setup/")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("box %s shows no setup page", b.addr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return boxes
}

// contents is what a restore must carry over: every menu item and every
// order, as the staff API answers them.
func contents(t *testing.T, get func(path string) (int, []byte)) (menu, orders []any) {
	t.Helper()
	var m struct{ Items []any }
	var o struct{ Orders []any }
	for path, v := range map[string]any{"/api/staff/menu": &m, "/api/kitchen/orders?status=ACCEPTED,COOKING,READY,SERVED,CANCELLED": &o} {
		code, body := get(path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatal(err)
		}
	}
	return m.Items, o.Orders
}

// The proof for backups: a store with orders and menu items; the
// manager makes a backup on the console's Backups page and the tablet
// saves the file; every box is lost; on three blank boxes the owner
// chooses "Restore a store from a backup" in the setup wizard, picks that
// file, types the shop's name and new passwords; the restored store holds
// every order and menu item of the one backed up, on every box.
// Screenshots of the Backups page and of the wizard's restore, at 390 and
// 1024 px, in Japanese and English (docs/img/console-backups-*,
// wizard-restore-*).
func TestBackupFromConsoleRestoresThroughWizard(t *testing.T) {
	b := startBrowser(t)
	s := startStore(t)
	n := s.leader()
	for i, table := range []string{"T1", "T2", "T3"} {
		sess := s.openSession(n, table)
		s.guestOrder([]int{n}, sess, []orderLine{{MenuID: "gyoza", Quantity: i + 1, Toppings: []string{}}, {MenuID: "beer", Quantity: 1, Toppings: []string{}}}, 10*time.Second)
	}
	wantMenu, wantOrders := contents(t, func(path string) (int, []byte) { r := s.staff(n, "GET", path, nil); return r.status, r.body })
	if len(wantMenu) == 0 || len(wantOrders) != 3 {
		t.Fatalf("the store to back up: %d menu items, %d orders", len(wantMenu), len(wantOrders))
	}

	// ---- the console: make the backup; the page saves it.
	st := b.open("staff-backups", s.url((n+1)%3)+"/staff/#backups", phoneW, phoneH)
	st.login()
	st.waitVisible("#backups-make")
	if got := st.text("#tab-backups"); got != "バックアップ" {
		t.Fatalf("tab %q", got)
	}
	// What the page hands the browser to save, kept for the test.
	eval[bool](st, `(() => { const make = URL.createObjectURL; URL.createObjectURL = (b) => { window.savedBackup = b; return make.call(URL, b); }; return true; })()`)
	var file string
	for _, lang := range []string{"ja", "en"} {
		if eval[string](st, `document.documentElement.lang`) != lang {
			st.click("#lang-toggle")
			st.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		st.click("#backups-make")
		st.waitFor("the backup saved", `document.querySelector('#backups-status').dataset.state === 'saved'`, 60*time.Second)
		want := map[string]string{"ja": "保存しました：masterorder-", "en": "Saved: masterorder-"}[lang]
		if got := st.text("#backups-status"); !strings.HasPrefix(got, want) || !strings.Contains(got, ".mosnap") {
			t.Fatalf("status %q", got)
		}
		shotsIn(st, "console-backups", `document.querySelector('#backups-status').dataset.state === 'saved'`, "#backups-make")
		file = eval[string](st, `document.querySelector('#page-backups').dataset.file`)
	}
	if want := "masterorder-" + s.c.Configs[0].ShopID + "-"; !strings.HasPrefix(file, want) {
		t.Fatalf("saved as %q, want %s…", file, want)
	}
	raw := eval[string](st, `(async () => {
		const b = new Uint8Array(await window.savedBackup.arrayBuffer());
		let s = '';
		for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
		return btoa(s);
	})()`)
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(data) == 0 {
		t.Fatalf("the saved file: %d bytes, %v", len(data), err)
	}
	saved := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(saved, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// ---- every box lost: three blank boxes; the wizard's restore.
	boxes := startBlankBoxes(t, 3)
	wz := b.open("wizard-restore", "http://"+boxes[0].addr+"/setup/", phoneW, phoneH)
	wz.waitFor("the boxes step", `!!document.querySelector('#step-boxes') && !document.querySelector('#step-boxes').hidden`, 30*time.Second)
	wz.click("#mode-restore")
	wz.waitFor("three boxes found, ticked", `document.querySelectorAll('#box-list input[type=checkbox]:checked').length === 3`, 60*time.Second)
	shotsIn(wz, "wizard-restore-1-boxes", `document.querySelectorAll('#box-list input:checked').length === 3`, "")
	wz.click("#box-next")
	wz.waitVisible("#backup-file")
	if got := wz.text("#shop-create"); got != "お店を戻す" {
		t.Fatalf("the create button reads %q in a restore", got)
	}
	// Create without a file: the page asks for it.
	wz.typeInto("#shop-name", shopName)
	wz.typeInto("#manager-pw", restoreManagerPW)
	wz.typeInto("#kitchen-pw", restoreKitchenPW)
	wz.click("#shop-create")
	wz.waitFor("the file asked for", `!document.querySelector('#shop-error').hidden && document.querySelector('#shop-error').textContent === 'バックアップのファイルを選んでください。'`, 10*time.Second)
	// A file that is not a backup: the box refuses it in words.
	notBackup := filepath.Join(t.TempDir(), "menu.mosnap")
	os.WriteFile(notBackup, []byte("name,price\nramen,900\n"), 0o600)
	wz.do(chromedp.SetUploadFiles(chromedp.CSS("#backup-file"), []string{notBackup}))
	wz.click("#shop-create")
	wz.waitFor("BACKUP_INVALID in words", `document.querySelector('#shop-error').textContent.startsWith('このファイルはお店のバックアップとして読めません。')`, 30*time.Second)
	wz.do(chromedp.SetUploadFiles(chromedp.CSS("#backup-file"), []string{saved}))
	for _, lang := range []string{"en", "ja"} {
		if eval[string](wz, `document.documentElement.lang`) != lang {
			wz.click("#lang-toggle")
			wz.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		shotsIn(wz, "wizard-restore-2-shop", `!document.querySelector('#backup-field').hidden`, "#backup-field")
	}
	wz.click("#shop-create")
	wz.waitVisible("#step-progress")
	if got := wz.text("#progress-title"); got != "3. お店を戻しています" {
		t.Errorf("progress title %q", got)
	}
	// On a timeout, the wizard's own account of where each box is.
	for deadline := time.Now().Add(3 * time.Minute); !wz.eval(`!!document.querySelector('#step-done') && !document.querySelector('#step-done').hidden`); {
		if time.Now().After(deadline) {
			var progress []byte
			if res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + boxes[0].addr + "/setup/api/progress"); err == nil {
				progress, _ = io.ReadAll(res.Body)
				res.Body.Close()
			}
			t.Fatalf("no done page within 3 min; the wizard's progress: %s", progress)
		}
		time.Sleep(250 * time.Millisecond)
	}
	wz.waitVisible("#done-restored")
	for _, lang := range []string{"ja", "en"} {
		if eval[string](wz, `document.documentElement.lang`) != lang {
			wz.click("#lang-toggle")
			wz.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
		shotsIn(wz, "wizard-restore-3-done", `!document.querySelector('#done-restored').hidden`, "")
	}

	// ---- the restored store holds every order and menu item, on every box.
	tab := setuptest.TabletClient(t, "http://"+boxes[0].addr)
	for i, bx := range boxes {
		base := "https://127.0.0.1:" + strconv.Itoa(bx.httpsPort)
		var login struct{ Token string }
		r := orderstest.Do(t, tab, "POST", base+"/api/staff/login", nil, map[string]string{"password": restoreManagerPW})
		if r.Status != 200 {
			t.Fatalf("box %d: login with the wizard's new password: %d %s", i, r.Status, r.Body)
		}
		r.Decode(t, &login)
		auth := map[string]string{"Authorization": "Bearer " + login.Token}
		get := func(path string) (int, []byte) {
			r := orderstest.Do(t, tab, "GET", base+path, auth, nil)
			return r.Status, r.Body
		}
		var menu, orders []any
		deadline := time.Now().Add(60 * time.Second)
		for {
			menu, orders = contents(t, get)
			if len(orders) == len(wantOrders) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !reflect.DeepEqual(menu, wantMenu) || !reflect.DeepEqual(orders, wantOrders) {
			t.Errorf("box %d holds %d menu items and %d orders, not those backed up (%d, %d)", i, len(menu), len(orders), len(wantMenu), len(wantOrders))
		}
	}
	t.Logf("restored %d menu items and %d orders onto three blank boxes", len(wantMenu), len(wantOrders))
}
