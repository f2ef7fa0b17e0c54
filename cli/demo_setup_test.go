package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"masterorder/setup"
)

// TestDemoSetupHintWorks (issue 39 #1): what `demo --setup` tells the
// owner to do without mDNS is something the wizard takes: a guest name it
// suggests is accepted, and it points to the address the staff screen
// prints under each table's QR code.
func TestDemoSetupHintWorks(t *testing.T) {
	port := demoSetupPort(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	printed := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- demo(ctx, []string{"--setup", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", t.TempDir()}, testEnv(out, io.Discard))
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, "the demo's ready line", func() bool { return strings.Contains(printed(), "Ctrl-C stops the boxes.") })
	page := regexp.MustCompile(`open the setup page: (http://\S+)/setup/`).FindStringSubmatch(printed())
	if page == nil {
		t.Fatalf("no setup page in %q", printed())
	}
	if !strings.Contains(printed(), "under each table's QR code") {
		t.Errorf("the demo does not say where a guest page opens without mDNS: %q", printed())
	}
	var boxes struct{ Boxes []setup.BoxView }
	waitFor(t, "three boxes", func() bool {
		return jsonCall(t, http.DefaultClient, "GET", page[1]+"/setup/api/boxes", nil, nil, &boxes) == 200 && len(boxes.Boxes) == 3
	})
	var ids []string
	for _, b := range boxes.Boxes {
		ids = append(ids, b.ID)
	}
	for _, m := range regexp.MustCompile(`type (\S+) as the guest name`).FindAllStringSubmatch(printed(), -1) {
		req := setup.CreateRequest{Boxes: ids, ShopName: "Demo", ManagerPasswordHash: hashFor(t, setupManagerPW),
			KitchenPasswordHash: hashFor(t, setupKitchenPW), GuestName: m[1]}
		var r struct{ ReasonCode, Field string }
		if st := jsonCall(t, http.DefaultClient, "POST", page[1]+"/setup/api/create", nil, req, &r); st == 400 {
			t.Errorf("the demo suggests %q as the guest name; the wizard refuses it: %+v", m[1], r)
		}
	}
}

// demoSetupPort is a free port p for `demo --setup`: p..p+2 and their
// HTTPS and Raft ports free too.
func demoSetupPort(t *testing.T) int {
	for try := 0; try < 100; try++ {
		p := demoPort(t)
		ok := true
		for i := 0; i < 3 && ok; i++ {
			for _, q := range []int{p + i, p + 1000 + i, p + httpsPortOffset + i} {
				if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", q)); err == nil {
					l.Close()
				} else {
					ok = false
				}
			}
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free ports for demo --setup")
	return 0
}
