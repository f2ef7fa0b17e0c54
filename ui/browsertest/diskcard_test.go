package browsertest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"masterorder/orders"
	"masterorder/orders/orderstest"
)

// TestFullCardBannerOnRealCard: box b's data directory sits on a 24 MB
// tmpfs of its own; the test fills it to the last block (a real full
// card: ENOSPC), and the console's Boxes page and the kitchen show the
// banner from the status box b reports (no fixture); freed, the banner
// goes. Screenshots at 390 and 1024 px, ja and en (docs/img/disk-full-*).
func TestFullCardBannerOnRealCard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited file system needs root")
	}
	card := filepath.Join(t.TempDir(), "card-b")
	if err := os.MkdirAll(card, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", card).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", card).Run() })
	b := startBrowser(t)
	st0 := orderstest.StartBefore(t, 3, func(i int, c *orders.FileConfig) {
		c.Staff.KitchenPasswordHash = kitchenHash(t)
		if i == 1 {
			c.NodeConfig.DataDir = card
		}
	}, nil, withUpdates(t), orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st0.Cluster, svcs: st0.Svcs, hc: &http.Client{Timeout: 10 * time.Second}}
	li, _ := s.c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := s.svcs[li].SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	s.c.WaitConverged(10 * time.Second)
	s.token = s.login(li)

	// Fill box b's card to the last block.
	f, err := os.OpenFile(filepath.Join(card, "filler"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	const n = 0 // the pages come from box a
	st := b.open("staff-card", s.url(n)+"/staff/#cluster", tabletW, tabletH)
	st.login()
	st.waitFor("box b's card full on the page", `!!document.querySelector('#health-problems [data-problem="disk-full"][data-box-id="b"]')`, 20*time.Second)
	st.waitFor("the banner", `!document.querySelector('#health-banner').hidden`, 10*time.Second)
	banner := st.text("#health-banner")
	t.Logf("console banner (ja): %q", banner)
	if !strings.Contains(banner, " b のメモリーカードがいっぱいです") {
		t.Fatalf("console banner %q", banner)
	}
	st.screenshot("disk-full-console-tablet-ja")
	st.viewport(phoneW, phoneH)
	st.screenshot("disk-full-console-phone-ja")
	st.click("#lang-toggle")
	st.waitFor("English banner", `/\bb’s memory card is full/.test(document.querySelector('#health-banner').textContent)`, 10*time.Second)
	t.Logf("console banner (en): %q", st.text("#health-banner"))
	st.screenshot("disk-full-console-phone-en")
	st.viewport(tabletW, tabletH)
	st.screenshot("disk-full-console-tablet-en")

	kt := b.open("kitchen-card", s.url(n)+"/kitchen/", tabletW, tabletH)
	kt.login()
	kt.waitFor("the kitchen banner", `/ b のメモリーカードがいっぱいです/.test(document.querySelector('#health-banner').textContent) && !document.querySelector('#health-banner').hidden`, 20*time.Second)
	t.Logf("kitchen banner: %q", kt.text("#health-banner"))
	kt.screenshot("disk-full-kitchen-tablet-ja")

	// Freed: box b catches up by itself and the banner goes.
	if err := os.Remove(filepath.Join(card, "filler")); err != nil {
		t.Fatal(err)
	}
	st.waitFor("no card problem", `!document.querySelector('#health-problems [data-problem^="disk-"]')`, 30*time.Second)
	kt.waitFor("no kitchen banner", `document.querySelector('#health-banner').hidden`, 30*time.Second)
}
