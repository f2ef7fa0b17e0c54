package setup

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"masterorder/httpapi"
	"masterorder/setup/cluster"
)

// The claim channel, served only over TLS with the box's setup key:
//
//	GET  /setup/v1/info       Info
//	POST /setup/v1/identify   blink the activity LED
//	POST /setup/v1/claim      ClaimRequest → ClaimResponse (window, code)
//	POST /setup/v1/configure  ConfigureRequest (the claim's token) → 202, then the box becomes a member
//	POST /setup/v1/release    ReleaseRequest: give a claimed box back to setup mode (a failed setup)
//
// A member answers every one of them 409 NOT_IN_SETUP; over plain HTTP
// they are 403 TLS_REQUIRED.
const claimPrefix = "/setup/v1"

// Ports are the ports a box will serve as a member.
type Ports struct {
	HTTP  int `json:"http"`
	HTTPS int `json:"https"`
	Raft  int `json:"raft"`
}

// Info is what a box tells about itself over the pinned channel.
type Info struct {
	ID           string    `json:"id"`
	ShortCode    string    `json:"shortCode"`
	State        Mode      `json:"state"`
	Version      string    `json:"version"`
	Fingerprint  string    `json:"fp"`
	Device       Device    `json:"device"`
	Ports        Ports     `json:"ports"`
	WindowOpen   bool      `json:"windowOpen"`
	WindowCloses time.Time `json:"windowCloses"`
	CodeRequired bool      `json:"codeRequired"`
}

// ClaimRequest claims a box for one setup.
type ClaimRequest struct {
	Claimer string `json:"claimer"` // the claiming box's id or node id
	Code    string `json:"code,omitempty"`
}

// ClaimResponse carries the token that authorises the config push.
type ClaimResponse struct {
	Token string `json:"token"`
}

// ConfigureRequest pushes a claimed box its config and TLS files.
type ConfigureRequest struct {
	Token  string            `json:"token"`
	Config cluster.Config    `json:"config"`
	Files  map[string][]byte `json:"files"`
}

// ReleaseRequest gives a claimed box back.
type ReleaseRequest struct {
	Token string `json:"token"`
}

// RefusedError is a box's refusal, with its reason code.
type RefusedError struct {
	Status  int
	Code    string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("box refused (%d %s): %s", e.Status, e.Code, e.Message)
}

// IsRefused reports whether err is a refusal with code.
func IsRefused(err error, code string) bool {
	var r *RefusedError
	return errors.As(err, &r) && r.Code == code
}

// ErrFingerprint: the box's certificate is not the one announced.
var ErrFingerprint = errors.New("setup: the box's certificate does not match the fingerprint it announced")

// Client talks to one box's claim channel over TLS pinned to the
// fingerprint the box announced: no other certificate is accepted, and
// nothing is sent before the handshake proved the pin.
type Client struct {
	Addr        string // host:port
	Fingerprint string
	http        *http.Client
	seen        string // the fingerprint presented, when not pinned (Probe)
}

// NewClient pins addr to fingerprint (hex SHA-256; must be non-empty).
func NewClient(addr, fingerprint string) *Client {
	c := &Client{Addr: addr, Fingerprint: strings.ToLower(fingerprint)}
	c.http = &http.Client{Timeout: 15 * time.Second, Transport: c.transport()}
	return c
}

func (c *Client) transport() *http.Transport {
	cfg := &tls.Config{
		// The setup certificate is self-signed: it is trusted by its
		// fingerprint alone, checked below for every connection.
		InsecureSkipVerify: true,
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"http/1.1"},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return ErrFingerprint
			}
			fp := Fingerprint(raw[0])
			if c.Fingerprint == "" {
				c.seen = fp
				return nil
			}
			if fp != c.Fingerprint {
				return ErrFingerprint
			}
			return nil
		},
	}
	return &http.Transport{TLSClientConfig: cfg, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: false}
}

// Probe reads the info of the box at addr over TLS without a pin and
// returns it with the fingerprint the box presented: the same trust as an
// mDNS announcement (for probe addresses given on the command line, or
// where multicast does not reach). Claims then pin that fingerprint.
func Probe(ctx context.Context, addr string) (Info, error) {
	c := NewClient(addr, "")
	var info Info
	if err := c.do(ctx, http.MethodGet, "/info", nil, &info); err != nil {
		return Info{}, err
	}
	if c.seen == "" || info.Fingerprint != c.seen {
		return Info{}, ErrFingerprint
	}
	return info, nil
}

// Info asks the box about itself.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	err := c.do(ctx, http.MethodGet, "/info", nil, &info)
	if err == nil && info.Fingerprint != c.Fingerprint {
		return Info{}, ErrFingerprint
	}
	return info, err
}

// Identify blinks the box's activity LED; blinking is the box's answer
// (false: it has no light it may blink).
func (c *Client) Identify(ctx context.Context) (blinking bool, err error) {
	var r struct {
		Blinking bool `json:"blinking"`
	}
	err = c.do(ctx, http.MethodPost, "/identify", struct{}{}, &r)
	return r.Blinking, err
}

// Claim claims the box for claimer (code: its setup code, if it has one)
// and returns the token for Configure or Release.
func (c *Client) Claim(ctx context.Context, claimer, code string) (string, error) {
	var r ClaimResponse
	if err := c.do(ctx, http.MethodPost, "/claim", ClaimRequest{Claimer: claimer, Code: code}, &r); err != nil {
		return "", err
	}
	return r.Token, nil
}

// Configure pushes the claimed box its bundle; the box writes it and
// becomes a member.
func (c *Client) Configure(ctx context.Context, token string, b cluster.Bundle) error {
	return c.do(ctx, http.MethodPost, "/configure", ConfigureRequest{Token: token, Config: b.Config, Files: b.Files}, nil)
}

// Release gives a claimed box back to setup mode.
func (c *Client) Release(ctx context.Context, token string) error {
	return c.do(ctx, http.MethodPost, "/release", ReleaseRequest{Token: token}, nil)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	if c.Fingerprint == "" && path != "/info" {
		return errors.New("setup: refusing to send to an unpinned box")
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+c.Addr+claimPrefix+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrFingerprint) || strings.Contains(err.Error(), ErrFingerprint.Error()) {
			return ErrFingerprint
		}
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e httpapi.Error
		json.Unmarshal(raw, &e)
		return &RefusedError{Status: resp.StatusCode, Code: e.ReasonCode, Message: e.Message}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// CloseIdle drops kept-alive connections.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }
