package cloudsync

import (
	"context"
	"errors"
	"fmt"

	vkit "cloud.google.com/go/firestore/apiv1"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Problem is the kind of a failed Firestore call, for words an owner
// reads: what to do differs for each.
type Problem string

const (
	// ProblemOffline: no answer (no internet, DNS, Firestore unreachable,
	// busy or slow). It passes by itself; the sync keeps trying.
	ProblemOffline Problem = "offline"
	// ProblemNoAccess: Firestore refused the key (PermissionDenied,
	// Unauthenticated): the service account lacks the rights, or the key
	// was deleted.
	ProblemNoAccess Problem = "noAccess"
	// ProblemNoDatabase: the project has no Firestore database yet.
	ProblemNoDatabase Problem = "noDatabase"
	// ProblemLocal: the boxes' own side failed (reading the outbox,
	// recording a sync without a quorum).
	ProblemLocal Problem = "local"
	// ProblemOther: any other refusal; the error's words tell.
	ProblemOther Problem = "other"
)

// Classify names the kind of err, a Firestore call's error ("" for nil).
func Classify(err error) Problem {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ProblemOffline
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return ProblemOffline
	case codes.PermissionDenied, codes.Unauthenticated:
		return ProblemNoAccess
	case codes.NotFound:
		return ProblemNoDatabase
	}
	return ProblemOther
}

// FieldCheckedAt is the field of shops/{shopId} that Check sets (to the
// server's time); nothing else of the document is touched.
const FieldCheckedAt = "masterorderCheckedAt"

// Check tries cfg's key (Key or CredentialsFile) with one write to
// shops/{ShopID}, the document the orders live under, through the real
// Firestore client and at cfg's endpoint (EmulatorHost, else Firestore).
// The write is not retried: a failure is answered at once, and Classify
// tells a refusal (the key is no good) from no answer (try again later).
// A bad configuration or key is a *KeyError or a plain error.
func Check(ctx context.Context, cfg Config) error {
	cfg.Enabled = true
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	ep, err := dial(cfg)
	if err != nil {
		return err
	}
	if ep.conn != nil {
		defer ep.conn.Close()
	}
	client, err := vkit.NewClient(ctx, ep.opts...)
	if err != nil {
		return fmt.Errorf("creating the Firestore client: %w", err)
	}
	defer client.Close()
	db := "projects/" + ep.project + "/databases/(default)"
	_, err = client.Commit(ctx, &firestorepb.CommitRequest{
		Database: db,
		Writes: []*firestorepb.Write{{
			Operation: &firestorepb.Write_Update{Update: &firestorepb.Document{Name: db + "/documents/shops/" + cfg.ShopID}},
			// An empty mask: the shop's other fields stay as they are.
			UpdateMask: &firestorepb.DocumentMask{},
			UpdateTransforms: []*firestorepb.DocumentTransform_FieldTransform{{
				FieldPath: FieldCheckedAt,
				TransformType: &firestorepb.DocumentTransform_FieldTransform_SetToServerValue{
					SetToServerValue: firestorepb.DocumentTransform_FieldTransform_REQUEST_TIME,
				},
			}},
		}},
	}, gax.WithRetry(func() gax.Retryer { return nil }))
	if err != nil {
		return fmt.Errorf("the test write to shops/%s in project %s: %w", cfg.ShopID, ep.project, err)
	}
	return nil
}
