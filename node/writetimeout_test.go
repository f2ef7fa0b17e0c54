package node_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// writeTimeoutNode starts one node whose write timeout is d, with test
// routes: /test/big writes a response far larger than any socket buffer
// and reports how its writing ended; /test/stream streams a capture of the
// replica through StreamCapture, slowed by a tee, for longer than d.
func writeTimeoutNode(t *testing.T, d time.Duration, big chan<- error) (addr string) {
	c := nodetest.Start(t, 1, nil, func(int) node.Options { return node.Options{WriteTimeout: d} },
		func(_ int, n *node.Node) {
			n.Echo().GET("/test/big", func(c echo.Context) error {
				c.Response().WriteHeader(http.StatusOK)
				chunk := make([]byte, 32<<10)
				var err error
				for i := 0; i < 8192 && err == nil; i++ { // 256 MiB
					_, err = c.Response().Write(chunk)
				}
				big <- err
				return nil
			})
			n.Echo().GET("/test/stream", func(c echo.Context) error {
				capt, err := n.FSM().Capture()
				if err != nil {
					return err
				}
				defer capt.Close()
				if err := capt.Wait(c.Request().Context()); err != nil {
					return err
				}
				return n.StreamCapture(c.Response(), capt, slowWriter{})
			})
		})
	return c.Configs[0].HTTPAddr
}

// slowWriter makes each write of a stream take a while.
type slowWriter struct{}

func (slowWriter) Write(p []byte) (int, error) {
	time.Sleep(700 * time.Millisecond)
	return len(p), nil
}

// A client that asks for a large answer and never reads it is cut off
// within the write timeout: the handler's write fails instead of blocking
// for good.
func TestWriteTimeoutCutsOffAReaderThatNeverReads(t *testing.T) {
	big := make(chan error, 1)
	addr := writeTimeoutNode(t, time.Second, big)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /test/big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-big:
		if err == nil {
			t.Fatal("256 MiB written to a client that reads nothing")
		}
		t.Logf("write ended with %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the response to a client that never reads is still being written after 60 s (write timeout 1 s)")
	}
}

// Streams extend the deadline per write: a capture streamed for several
// times the write timeout arrives whole.
func TestStreamOutlastsWriteTimeout(t *testing.T) {
	addr := writeTimeoutNode(t, 300*time.Millisecond, make(chan error, 1))
	start := time.Now()
	resp, err := http.Get("http://" + addr + "/test/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, bufio.NewReader(resp.Body))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("stream cut after %d bytes, %v: %v", got, took, err)
	}
	if took < 2*300*time.Millisecond {
		t.Fatalf("stream took %v: it does not outlast the 300 ms write timeout, so this test proves nothing", took)
	}
	if got == 0 {
		t.Fatal("empty stream")
	}
	t.Logf("%d bytes in %v with a 300 ms write timeout", got, took)
}
