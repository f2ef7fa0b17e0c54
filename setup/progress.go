package setup

import (
	"errors"

	"masterorder/httpapi"
)

// What the pages follow of a setup job: the wizard forming a store
// (Progress, GET /setup/api/progress) and the console adding or replacing
// a box (setup/join's Progress, GET /api/staff/cluster/join). Both are a
// Job: a state, and when it failed, a Reason.

// States of a Job.
const (
	JobIdle    = "idle"
	JobWorking = "working"
	JobDone    = "done"
	JobFailed  = "failed"
)

// Job is where a setup job stands: State, and Reason once it failed.
type Job struct {
	State string `json:"state"`
	Reason
}

// Reason is why a job or one box of it failed: a reason code (httpapi's
// table), the specifics for an engineer (in English) and, filled per
// request by Worded, the code in words for the page.
type Reason struct {
	Error   string `json:"error,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Message string `json:"message,omitempty"`
}

// ReasonOf is the reason for err: the code a box refused with,
// FINGERPRINT_MISMATCH for a box whose key is not the one announced,
// else UNREACHABLE. A wrapped error keeps its reason.
func ReasonOf(err error) Reason {
	if r := (*RefusedError)(nil); errors.As(err, &r) {
		return Reason{Error: r.Code, Detail: r.Message}
	}
	if errors.Is(err, ErrFingerprint) {
		return Reason{Error: "FINGERPRINT_MISMATCH", Detail: err.Error()}
	}
	return Reason{Error: "UNREACHABLE", Detail: err.Error()}
}

// Worded fills Message from Error (httpapi's table), in English or
// Japanese; no code, no message.
func (r Reason) Worded(english bool) Reason {
	r.Message = ""
	if r.Error != "" {
		r.Message = httpapi.Message(r.Error, english)
	}
	return r
}

// Steps of a box in the wizard's Progress, in order.
const (
	StepFound   = "found"
	StepClaimed = "claimed"
	StepStarted = "started"
	StepJoined  = "joined" // in the cluster
	StepReady   = "ready"
)

// Progress is the wizard's job: idle, working, done or failed (and
// "member" on a member whose process ran no setup).
type Progress struct {
	Job
	Boxes []BoxProgress `json:"boxes,omitempty"`
	Done  *Done         `json:"done,omitempty"`
	// Restore: the store is made from a backup (the wizard's restore).
	Restore bool `json:"restore,omitempty"`
}

// BoxProgress is one box's step in the wizard's job.
type BoxProgress struct {
	ID        string `json:"id"`
	ShortCode string `json:"shortCode"`
	Hostname  string `json:"hostname"`
	NodeID    string `json:"nodeId,omitempty"`
	Step      string `json:"step"`
	Reason
}

// Worded words the job's reason and each box's for the owner.
func (p Progress) Worded(english bool) Progress {
	p.Reason = p.Reason.Worded(english)
	p.Boxes = append([]BoxProgress(nil), p.Boxes...)
	for i := range p.Boxes {
		p.Boxes[i].Reason = p.Boxes[i].Reason.Worded(english)
	}
	return p
}

// Done is what the done page shows.
type Done struct {
	ShopName   string    `json:"shopName"`
	StaffURL   string    `json:"staffUrl"`
	KitchenURL string    `json:"kitchenUrl"`
	GuestURL   string    `json:"guestUrl"`
	CAURL      string    `json:"caUrl"`
	Boxes      []DoneBox `json:"boxes"`
}

// DoneBox is one box on the done page and the setup sheet.
type DoneBox struct {
	NodeID   string `json:"nodeId"`
	Hostname string `json:"hostname"`
	StaffURL string `json:"staffUrl"`
}
