package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// profileSeconds is how long a member's CPU profile of a window of d
// runs: the window in whole seconds, at least 1, at most 25, as
// `masterorder bench --cpuprofile` asks its nodes, so the two profiles
// cover the same stretch of their runs.
func profileSeconds(d time.Duration) int {
	return min(max(1, int(d.Round(time.Second)/time.Second)), 25)
}

// profileWindow writes the CPU profile of the measured window of every
// member (etcd started with --enable-pprof serves /debug/pprof on its
// client URL) into dir as m1.pprof, m2.pprof, …, and this process's own
// (the clients' gRPC) as callers.pprof. It returns after d (the window)
// and the members' answers, with the files written; what failed is
// printed and left out, not fatal: the run's figures stand without it.
// It mirrors bench/closedloop.go's profile, which this module (kept apart
// so the etcd client stays out of the main module) does not import.
func profileWindow(ctx context.Context, dir string, ms []*member, d time.Duration) []string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench: --cpuprofile:", err)
		sleepCtx(ctx, d)
		return nil
	}
	secs := profileSeconds(d)
	var mu sync.Mutex
	var files []string
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			name := filepath.Join(dir, m.name+".pprof")
			if err := fetchProfile(ctx, m.client, secs, name, d+30*time.Second); err != nil {
				fmt.Fprintf(os.Stderr, "etcdbench: --cpuprofile %s: %v\n", m.name, err)
				return
			}
			mu.Lock()
			files = append(files, name)
			mu.Unlock()
		})
	}
	stopSelf := profileSelf(filepath.Join(dir, "callers.pprof"))
	sleepCtx(ctx, d)
	self := stopSelf()
	wg.Wait() // files is the members' goroutines' until then
	if self != "" {
		files = append(files, self)
	}
	slices.Sort(files)
	return files
}

// fetchProfile saves base's /debug/pprof/profile of secs seconds as name.
func fetchProfile(ctx context.Context, base string, secs int, name string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s (is etcd started with --enable-pprof?)", resp.Status)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// profileSelf starts this process's CPU profile into name; the function
// it returns stops it and returns name ("" when there is no profile).
func profileSelf(name string) func() string {
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench: --cpuprofile:", err)
		return func() string { return "" }
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench: --cpuprofile callers:", err)
		f.Close()
		os.Remove(name)
		return func() string { return "" }
	}
	return func() string {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "etcdbench: --cpuprofile:", err)
			return ""
		}
		return name
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
