// Package edgesync joins the cloud service to the MQTT side of the edge
// sync: Store is the cloud half's store (sync/mqttsync.CloudStore) over a
// *cloud.Service, and Authenticator lets the embedded broker (sync/broker)
// admit the cloud's own connections and each edge onto its own site.
// On Mosquitto, Accounts keeps the edges' accounts through its dynamic
// security plugin (sync/broker/dynsec) and Reconciler keeps them in step
// with the edges (docs/decisions.md, "Edge accounts on Mosquitto").
// svc-cloud wires them; the end-to-end harness edge/sitetest wires Store
// and Authenticator too, so both run the same adapter.
//
// It may import cloud, sync/mqttsync, sync/broker, sync/broker/dynsec,
// sync/protocol, shared/ids and the standard library.
package edgesync

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

// CloudUsername is the broker username of the cloud's own connections to
// the embedded broker; their password is CloudPassword's.
const CloudUsername = "svc-cloud"

// Store is the cloud half's view of the service. An edge or site the
// service refuses (cloud.ErrEdgeRejected, cloud.ErrNotFound) is
// mqttsync.ErrRejected, so the cloud half does not acknowledge the fact
// and the edge keeps it; any other error is transient.
type Store struct{ Service *cloud.Service }

var _ mqttsync.CloudStore = Store{}

// Changes returns the site's changes after after, as
// cloud.Service.SiteChanges does.
func (s Store) Changes(ctx context.Context, site protocol.Site, after uint64, limit int) ([]protocol.Change, uint64, error) {
	return s.Service.SiteChanges(ctx, site, after, limit)
}

// Snapshot returns the site's whole state, unsplit.
func (s Store) Snapshot(ctx context.Context, site protocol.Site) (protocol.Snapshot, error) {
	snap, err := s.Service.SiteSnapshot(ctx, site)
	if err != nil {
		return protocol.Snapshot{}, err
	}
	settings := snap.Settings
	return protocol.Snapshot{Seq: snap.Seq, Settings: &settings, Gates: snap.Gates, Keys: snap.Keys, Visits: snap.Visits, People: snap.People,
		Teams: snap.Teams, VisitTypes: snap.VisitTypes, Hardware: snap.Hardware}, nil
}

// ApplyFact applies a fact once by its ID (cloud.Service.ApplyFact).
func (s Store) ApplyFact(ctx context.Context, site protocol.Site, f protocol.Fact) error {
	return rejected(s.Service.ApplyFact(ctx, site, f))
}

// ApplyFacts applies facts of the site in one transaction, each once by
// its ID (cloud.Service.ApplyFacts). A refusal that fails a batch of one
// is that fact's; of a larger batch it fails the batch, which the cloud
// half then tries fact by fact.
func (s Store) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	errs, err := s.Service.ApplyFacts(ctx, site, facts)
	if len(facts) == 1 && refused(err) {
		return []error{rejected(err)}, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range errs {
		errs[i] = rejected(errs[i])
	}
	return errs, nil
}

// EdgeStatus records an edge's status (cloud.Service.RecordEdgeStatus).
func (s Store) EdgeStatus(ctx context.Context, site protocol.Site, st protocol.Status) error {
	return rejected(s.Service.RecordEdgeStatus(ctx, site, st))
}

// SiteEdge says whether edgeID is an edge of the site that may sync
// (cloud.Service.SiteEdge).
func (s Store) SiteEdge(ctx context.Context, site protocol.Site, edgeID string) error {
	return rejected(s.Service.SiteEdge(ctx, site, edgeID))
}

// FeedHead returns the head of the site's feed (cloud.Service.FeedHead).
func (s Store) FeedHead(ctx context.Context, site protocol.Site) (uint64, error) {
	return s.Service.FeedHead(ctx, site)
}

// PublishFeeds hands fn the changes not yet published
// (cloud.Service.PublishFeeds).
func (s Store) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	return s.Service.PublishFeeds(ctx, limit, fn)
}

// rejected translates the service's refusals into the cloud half's.
func rejected(err error) error {
	if refused(err) {
		return fmt.Errorf("%w: %w", mqttsync.ErrRejected, err)
	}
	return err
}

func refused(err error) bool {
	return errors.Is(err, cloud.ErrEdgeRejected) || errors.Is(err, cloud.ErrNotFound)
}

// CloudPassword returns the password of the cloud's own broker
// connections: a server secret in the store, made on first use, so every
// process sharing the store agrees on it.
func CloudPassword(ctx context.Context, svc *cloud.Service) (string, error) {
	b, err := svc.Store().Secret(ctx, "mqtt-cloud-password", func() []byte {
		k := make([]byte, 32)
		rand.Read(k)
		return k
	})
	if err != nil {
		return "", fmt.Errorf("broker password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Authenticator lets the cloud's processes in (CloudUsername with
// cloudPass) everywhere under the protocol's root, and each edge in with
// its own credentials onto its own site's topics.
func Authenticator(svc *cloud.Service, cloudPass string) broker.Authenticator {
	return broker.AuthenticatorFunc(func(ctx context.Context, username, password string) (broker.Access, error) {
		if username == CloudUsername {
			if subtle.ConstantTimeCompare([]byte(password), []byte(cloudPass)) != 1 {
				return broker.Access{}, cloud.ErrUnauthorized
			}
			return broker.Access{Cloud: true}, nil
		}
		e, err := svc.AuthenticateEdge(ctx, username, password)
		if err != nil {
			return broker.Access{}, err
		}
		return broker.Access{Site: cloud.EdgeSite(e.Tenant, e.SiteID), EdgeID: e.ID}, nil
	})
}
