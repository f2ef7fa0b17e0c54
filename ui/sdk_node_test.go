package ui

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestOrderSDKWithNode runs the order-sdk.js unit tests (ui/sdk_test/)
// under Node's built-in test runner. Without node on PATH the test is
// skipped, except in CI (CI=true), where a missing node is a failure.
func TestOrderSDKWithNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not on PATH; CI must run the order-sdk.js tests (node --test ui/sdk_test/)")
		}
		t.Skip("node is not on PATH: skipping the order-sdk.js tests (run them with: node --test ui/sdk_test/)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// the file, not the folder: Node versions differ in how they search a
	// folder given to --test
	cmd := exec.CommandContext(ctx, node, "--test", "sdk_test/order-sdk.test.mjs", "sdk_test/health.test.mjs", "sdk_test/ids.test.mjs", "sdk_test/menucsv.test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}
