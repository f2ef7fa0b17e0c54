package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Reason codes the guest retry logic branches on (API.md, "Placing a guest
// order").
const (
	reasonCooldown         = "COOLDOWN_ACTIVE"
	reasonOrderInProgress  = "SESSION_ORDER_IN_PROGRESS"
	reasonSessionBusy      = "SESSION_BUSY"
	reasonDuplicateKey     = "DUPLICATE_IDEMPOTENCY_KEY"
	reasonDuplicatePayload = "DUPLICATE_PAYLOAD"
)

// maxBody bounds what the bench reads from one response.
const maxBody = 8 << 20

// errDroppedResponse is the simulated lost response (--lost-response).
var errDroppedResponse = errors.New("response dropped on purpose (lost-response fault)")

// newHTTPClient is the one client every request of a run shares: many idle
// connections per host (every guest talks to every node) and timeouts at
// every stage.
func newHTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy: nil, // a store LAN; never a proxy from the environment
		DialContext: (&net.Dialer{
			Timeout:   3 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          2048,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout + 2*time.Second}
}

// response is one HTTP answer, read in full.
type response struct {
	status     int
	header     http.Header
	body       []byte
	reason     string        // reasonCode of an error body, else ""
	message    string        // message of an error body
	retryAfter time.Duration // -1 when absent or unparsable
	elapsed    time.Duration
}

// reasonOrStatus is the reason code, or HTTP_<status> when the body had none.
func (r *response) reasonOrStatus() string {
	if r.reason != "" {
		return r.reason
	}
	return "HTTP_" + strconv.Itoa(r.status)
}

func (r *response) String() string {
	if r.message != "" {
		return fmt.Sprintf("%d %s: %s", r.status, r.reasonOrStatus(), r.message)
	}
	return fmt.Sprintf("%d %s", r.status, r.reasonOrStatus())
}

// do sends one request and reads the whole answer. With drop the answer is
// discarded unread once its headers arrived (the server has done the work)
// and errDroppedResponse is returned, as if the network had lost it.
func do(ctx context.Context, c *http.Client, timeout time.Duration, method, url string, hdr http.Header, body any, drop bool) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Language", "en")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if drop {
		cancel() // abort reading mid-response
		resp.Body.Close()
		return nil, errDroppedResponse
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	r := &response{
		status:     resp.StatusCode,
		header:     resp.Header,
		body:       b,
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		elapsed:    time.Since(start),
	}
	if resp.StatusCode >= 300 {
		var e struct {
			ReasonCode string `json:"reasonCode"`
			Message    string `json:"message"`
		}
		if json.Unmarshal(b, &e) == nil {
			r.reason, r.message = e.ReasonCode, e.Message
		}
	}
	return r, nil
}

// parseRetryAfter reads whole seconds or an HTTP date; -1 when absent.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return -1
		}
		if n > 3600 {
			n = 3600
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d
	}
	return -1
}

// newUUIDv4 is a random RFC 4122 version 4 UUID, lower case.
func newUUIDv4() string { return uuid.NewString() }

// randomID is n random hex characters.
func randomID(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := crand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)[:n]
}
