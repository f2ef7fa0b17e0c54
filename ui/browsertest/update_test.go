package browsertest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"masterorder/api/apitest"
	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/orderstest"
	"masterorder/update"
)

const updateBoard = "masterorder-rpi-arm64"

// restartInstaller stands in for the slot switch of in-process boxes,
// which cannot restart into another binary: it writes nothing, and its
// restart stops the node and starts it again from its files, still on
// 1.0.0, once the test releases it, as a box whose new system failed and
// whose boot loader went back to the old slot. The real restart into a
// new binary and its fallback are update/process_test.go's.
type restartInstaller struct{ restart func() }

func (restartInstaller) Install(context.Context, string) error { return nil }
func (r restartInstaller) Reboot() error                       { r.restart(); return nil }
func (restartInstaller) Commit() error                         { return nil }
func (restartInstaller) Fallback() error                       { return nil }

// updateKeys makes a test CA (the boxes' keyring) and a bundle of version
// 1.1.0 signed by it, and an unsigned one, with RAUC.
func updateKeys(t *testing.T) (keyring, signed, unsigned string) {
	t.Helper()
	for _, tool := range []string{"rauc", "mksquashfs", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Geteuid() != 0 {
				t.Skipf("SKIPPED, NOT ROOT: %s missing (apt-get install rauc squashfs-tools openssl; .ci/run does)", tool)
			}
			t.Fatalf("%s missing: apt-get install rauc squashfs-tools openssl (.ci/run does)", tool)
		}
	}
	dir := t.TempDir()
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
		"-subj", "/CN=store test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
	run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "rel.key", "-out", "rel.csr", "-subj", "/CN=release")
	os.WriteFile(filepath.Join(dir, "ext.cnf"), []byte("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"), 0o600)
	run("openssl", "x509", "-req", "-in", "rel.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "rel.pem", "-days", "30", "-extfile", "ext.cnf")
	content := filepath.Join(dir, "content")
	os.Mkdir(content, 0o755)
	payload := make([]byte, 64<<10)
	rand.Read(payload)
	os.WriteFile(filepath.Join(content, "masterorder"), payload, 0o755)
	os.WriteFile(filepath.Join(content, "manifest.raucm"), []byte("[update]\ncompatible="+updateBoard+"\nversion=1.1.0\n\n[bundle]\nformat=verity\n\n[image.rootfs]\nfilename=masterorder\n"), 0o644)
	signed = filepath.Join(dir, "masterorder-1.1.0-rpi-arm64.raucb")
	run("rauc", "bundle", "--cert=rel.pem", "--key=rel.key", content, signed)
	unsigned = filepath.Join(dir, "masterorder-unsigned.raucb")
	run("mksquashfs", content, unsigned, "-quiet", "-noappend")
	return filepath.Join(dir, "ca.pem"), signed, unsigned
}

// The Boxes page's "Updating the store" as a manager uses it, in
// Japanese and English: an unsigned file is refused in words; the signed
// file is offered; one tap (confirmed) starts the rollout, each box's
// step shows, and a box that comes back on its old version (its new
// system failed) stops the rollout, in words. Screenshots at 390 and 1024 px (docs/img/console-update-*).
func TestUpdatePage(t *testing.T) {
	keyring, signed, unsigned := updateKeys(t)
	b := startBrowser(t)
	// The release index, on a local HTTP server (the internet in a test).
	raw, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	var indexHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /index.json", func(w http.ResponseWriter, r *http.Request) {
		indexHits.Add(1)
		json.NewEncoder(w).Encode(update.ReleaseIndex{Version: "1.1.0", Compatible: updateBoard, URL: "bundle.raucb", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(raw))})
	})
	mux.HandleFunc("GET /bundle.raucb", func(w http.ResponseWriter, r *http.Request) { w.Write(raw) })
	releases := httptest.NewServer(mux)
	t.Cleanup(releases.Close)

	var st *orderstest.Store
	release, restarted := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	st = orderstest.StartBefore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Staff.KitchenPasswordHash = kitchenHash(t)
		c.Shop.Name = shopName
		c.Update.Keyring, c.Update.Compatible = keyring, updateBoard
		c.Update.ReleaseIndexURL = releases.URL + "/index.json"
		c.Update.BoxTimeout = node.Duration{Duration: 3 * time.Minute}
		// A busy test machine's slow fsyncs would put the slow-card
		// banner on the screenshots.
		c.Disk.SlowWrite = node.Duration{Duration: time.Minute}
	}, nil, func(i int, nd *node.Node) {
		restart := func() {
			go func() {
				defer close(restarted)
				st.StopNode(i)
				<-release
				st.StartNode(i)
			}()
		}
		if _, err := update.New(nd, update.Options{Version: "1.0.0", Installer: restartInstaller{restart: restart}}); err != nil {
			t.Fatalf("update on node %d: %v", i, err)
		}
	}, orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st.Cluster, svcs: st.Svcs, hc: apitest.Client(t, &http.Client{Timeout: 10 * time.Second})}
	li, _ := s.c.WaitLeader(10 * time.Second)
	for i := range s.c.Nodes {
		s.waitReady(i)
	}
	s.token = s.login(li)

	setLang := func(tb *tab, lang string) {
		if eval[string](tb, `document.documentElement.lang`) != lang {
			tb.click("#lang-toggle")
			tb.waitFor("the page in "+lang, `document.documentElement.lang === '`+lang+`'`, 5*time.Second)
		}
	}
	langs := []string{"ja", "en"}
	// The page comes from the leader, which keeps the offered bundle and
	// is updated last: the followers fetch the bundle from it.
	tb := b.open("staff-update", s.url(li)+"/staff/#cluster", phoneW, phoneH)
	tb.login()
	tb.waitFor("the update card with three boxes on 1.0.0", `document.querySelectorAll('#update-boxes li').length === 3 &&
		document.querySelector('#update-boxes').textContent.includes('1.0.0')`, 20*time.Second)

	// An unsigned file: refused in words.
	for _, lang := range langs {
		setLang(tb, lang)
		tb.do(chromedp.SetUploadFiles(chromedp.CSS("#update-file"), []string{unsigned}))
		msg := httpapi.Message(update.CodeUnsigned, lang == "en")
		tb.waitFor("unsigned refused in words", fmt.Sprintf(`(() => { const n = document.querySelector('#update-note');
			return n && n.dataset.code === 'BUNDLE_UNSIGNED' && n.textContent === %q; })()`, msg), 30*time.Second)
		shotsIn(tb, "console-update-refused", `!!document.querySelector('#update-note')`, "#update-card")
	}

	// The release index is read on the tap only; its bundle is offered.
	if n := indexHits.Load(); n != 0 {
		t.Fatalf("the release index was read %d times before the tap", n)
	}
	tb.click("#update-look")
	tb.waitFor("1.1.0 offered from the internet", `(() => { const o = document.querySelector('#update-offer');
		return o && o.dataset.state === 'ready' && o.dataset.source === 'index' && o.dataset.version === '1.1.0' &&
			!!document.querySelector('#update-start'); })()`, 30*time.Second)
	var ov struct{ Offered update.Staged }
	s.staff(li, "GET", "/api/staff/update", nil).decode(t, &ov)
	if ov.Offered.Source != "index" || indexHits.Load() != 1 {
		t.Fatalf("offered %+v after %d reads of the index", ov.Offered, indexHits.Load())
	}
	// The same version picked as a file is offered the same way.
	tb.do(chromedp.SetUploadFiles(chromedp.CSS("#update-file"), []string{signed}))
	tb.waitFor("1.1.0 offered from the file", `(() => { const o = document.querySelector('#update-offer');
		return o && o.dataset.state === 'ready' && o.dataset.source === 'file' && o.dataset.version === '1.1.0' &&
			!!document.querySelector('#update-start') && !document.querySelector('#update-note'); })()`, 30*time.Second)
	for _, lang := range langs {
		setLang(tb, lang)
		shotsIn(tb, "console-update-offered", `!!document.querySelector('#update-start')`, "#update-card")
	}

	// One tap, confirmed: the rollout runs, box by box.
	tb.click("#update-start")
	tb.waitVisible("#confirm-dialog")
	tb.click("#confirm-ok")
	tb.waitFor("a box restarting", `(() => { const r = document.querySelector('#update-rollout');
		return r && r.dataset.state === 'running' && !!document.querySelector('#update-boxes li[data-step="restarting"]'); })()`, 30*time.Second)
	for _, lang := range langs {
		setLang(tb, lang)
		shotsIn(tb, "console-update-progress", `!!document.querySelector('#update-boxes li[data-step="restarting"]')`, "#update-card")
	}

	// The box comes back on its old version: the rollout stops, in words,
	// and the store goes on with every box.
	releaseOnce.Do(func() { close(release) })
	<-restarted
	for _, lang := range langs {
		setLang(tb, lang)
		stopped := httpapi.Message(update.CodeRolledBack, lang == "en")
		tb.waitFor("the rollout stopped in words", fmt.Sprintf(`(() => { const r = document.querySelector('#update-rollout');
			return r && r.dataset.state === 'stopped' && r.textContent.includes(%q); })()`, stopped), 90*time.Second)
		shotsIn(tb, "console-update-stopped", `document.querySelector('#update-rollout').dataset.state === 'stopped' &&
			!!document.querySelector('#update-boxes li[data-state="rolledBack"]')`, "#update-card")
	}
	if strings.Contains(strings.ToLower(tb.text("#update-card")), "raft") {
		t.Error("Raft words on the owner's card")
	}
}
