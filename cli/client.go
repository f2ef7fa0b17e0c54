package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// The CLI's client of a running store's staff API (members, backup).

// passwordEnv is read when --password is not given (keeps the password
// out of the process list and shell history).
const passwordEnv = "MASTERORDER_STAFF_PASSWORD"

type opsClient struct {
	base  string
	token string
	http  *http.Client
}

// staffClient logs in to base with the staff password.
func staffClient(ctx context.Context, base, password string) (*opsClient, error) {
	if password == "" {
		password = os.Getenv(passwordEnv)
	}
	if password == "" {
		return nil, badUsage("needs --password or $" + passwordEnv)
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	c := &opsClient{base: base, http: &http.Client{Transport: &http.Transport{Proxy: nil, ResponseHeaderTimeout: 30 * time.Second}}}
	var out struct {
		Token string `json:"token"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/staff/login", map[string]string{"password": password}, &out); err != nil {
		return nil, fmt.Errorf("login at %s: %w", base, err)
	}
	c.token = out.Token
	return c, nil
}

// apiError is a refusal from the server, with its reason code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.msg) }

func (c *opsClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, c.base+path, rd)
	if err != nil {
		return badFlag("--url", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			ReasonCode string `json:"reasonCode"`
			Message    string `json:"message"`
		}
		json.Unmarshal(data, &e)
		if e.ReasonCode == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return &apiError{status: resp.StatusCode, code: e.ReasonCode, msg: e.Message}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
