package setup

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"masterorder/setup/cluster"
)

// form claims the picked boxes, pushes cl's (made and checked by
// handleCreate with package cluster, as init makes one) every box its bundle as node ids[i] (this box
// last: it stops its setup server to become a member) and follows them
// until ready.
func (w *Wizard) form(req CreateRequest, cl *cluster.Cluster, picked []Candidate, ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := make([]*Client, len(picked))
	tokens := make([]string, len(picked))
	release := func() {
		for i, t := range tokens {
			if t != "" {
				rctx, c := context.WithTimeout(context.Background(), 5*time.Second)
				clients[i].Release(rctx, t)
				c()
			}
		}
	}
	for i, e := range picked {
		clients[i] = NewClient(e.Addr, e.Fingerprint)
		tok, err := clients[i].Claim(ctx, w.box.id.ID, req.SetupCode)
		if err != nil {
			r := ReasonOf(err)
			w.setStep(i, "", r)
			release()
			w.fail(r.Error)
			return
		}
		tokens[i] = tok
		w.setStep(i, StepClaimed, Reason{})
	}
	boxes := make([]cluster.Box, len(picked))
	for i, e := range picked {
		host, _, _ := net.SplitHostPort(e.Addr)
		boxes[i] = cluster.Box{ID: ids[i], Host: host, HTTPPort: strconv.Itoa(e.Info.Ports.HTTP),
			RaftPort: strconv.Itoa(e.Info.Ports.Raft), HTTPSPort: strconv.Itoa(e.Info.Ports.HTTPS)}
	}
	peers := cl.Peers(boxes)
	// A restore seeds this box first, before any box is configured: a
	// failure leaves every box blank, and the others are told to join
	// this one (they must not start an empty store of their own).
	join := func(i int) bool { return req.Restore && !picked[i].Self }
	if req.Restore {
		for i, e := range picked {
			if !e.Self {
				continue
			}
			bundle, err := cl.Bundle(boxes[i], peers, false, true)
			if err == nil {
				err = w.restoreSelf(bundle)
			}
			if err != nil {
				w.setStep(i, "", Reason{Error: "RESTORE_FAILED", Detail: err.Error()})
				release()
				w.fail("RESTORE_FAILED")
				return
			}
		}
	}
	order := make([]int, 0, len(picked))
	for i, e := range picked {
		if !e.Self {
			order = append(order, i)
		}
	}
	for i, e := range picked {
		if e.Self {
			order = append(order, i)
		}
	}
	// A box that fails its push (it lost power or its cable midway) does
	// not stop the others while a majority of the store can still run:
	// the store starts without it, and the console's "Replace" puts
	// another box in its place. Without a majority nothing more is
	// configured (with this box last, a three-box store then has none).
	majority := len(picked)/2 + 1
	configured := make([]bool, len(picked))
	ok, lastCode := 0, ""
	for _, i := range order {
		if picked[i].Self && ok+1 < majority {
			release()
			if req.Restore {
				w.unrestore()
			}
			w.fail(lastCode)
			return
		}
		bundle, err := cl.Bundle(boxes[i], peers, join(i), true)
		if err == nil {
			err = configure(ctx, clients[i], tokens[i], bundle)
		}
		if err != nil {
			r := ReasonOf(err)
			w.setStep(i, "", r)
			if picked[i].Self {
				release()
				if req.Restore {
					w.unrestore()
				}
				w.fail(r.Error)
				return
			}
			lastCode = r.Error
			continue
		}
		tokens[i] = "" // configured: nothing to release
		configured[i] = true
		ok++
		if req.Restore && picked[i].Self {
			w.restored()
		}
	}
	release() // the boxes that failed go back to setup mode if they still answer
	w.follow(ctx, req, peers, configured)
}

func (w *Wizard) makeCluster(req CreateRequest) (*cluster.Cluster, error) {
	cl, err := cluster.New(ShopID(req.ShopName))
	if err != nil {
		return nil, err
	}
	cl.StaffPasswordHash, cl.KitchenPasswordHash = req.ManagerPasswordHash, req.KitchenPasswordHash
	cl.ShopName = req.ShopName
	tax := req.TaxRatePercent
	cl.TaxRatePercent = &tax
	cl.PublicURL = guestURL(req.GuestName, w.box.ports.HTTP)
	cl.MDNSName = req.GuestName // the members answer it (node/lanname)
	cl.TimeZone = req.TimeZone
	return cl, nil
}

// guestURL is public_url for the guest name on the members' HTTP port.
func guestURL(name string, port int) string {
	if port == 80 {
		return "http://" + name
	}
	return "http://" + net.JoinHostPort(name, strconv.Itoa(port))
}

// configure pushes a bundle, trying again through a short network blip
// (some boxes of the cluster may already be configured, waiting for this
// one). A push whose answer was lost finds the box a member: done.
func configure(ctx context.Context, c *Client, token string, b cluster.Bundle) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		err = c.Configure(ctx, token, b)
		switch {
		case err == nil:
			return nil
		case attempt > 0 && IsRefused(err, "NOT_IN_SETUP"):
			return nil
		case errors.As(err, new(*RefusedError)):
			return err // the box said no: trying again will not change it
		case attempt > 0 && answersAsMember(ctx, c.Addr):
			return nil // the first push went through; its answer was lost
		}
	}
	return err
}

// answersAsMember reports whether the box at addr now serves as a member
// (its store answers /healthz where setup mode had none).
func answersAsMember(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
