package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

// cloudUsername is the broker username of svc-cloud's own connections to
// the embedded broker; its password is a server secret in the store, so
// every process sharing the store agrees on it.
const cloudUsername = "svc-cloud"

// syncStore is the cloud half's view of the service.
type syncStore struct{ svc *cloud.Service }

var _ mqttsync.CloudStore = syncStore{}

func (s syncStore) Changes(ctx context.Context, site protocol.Site, after uint64, limit int) ([]protocol.Change, uint64, error) {
	return s.svc.SiteChanges(ctx, site, after, limit)
}

func (s syncStore) Snapshot(ctx context.Context, site protocol.Site) (protocol.Snapshot, error) {
	snap, err := s.svc.SiteSnapshot(ctx, site)
	if err != nil {
		return protocol.Snapshot{}, err
	}
	settings := snap.Settings
	return protocol.Snapshot{Seq: snap.Seq, Settings: &settings, Gates: snap.Gates, Keys: snap.Keys, Visits: snap.Visits}, nil
}

func (s syncStore) ApplyFact(ctx context.Context, site protocol.Site, f protocol.Fact) error {
	err := s.svc.ApplyFact(ctx, site, f)
	if errors.Is(err, cloud.ErrEdgeRejected) || errors.Is(err, cloud.ErrNotFound) {
		return fmt.Errorf("%w: %w", mqttsync.ErrRejected, err)
	}
	return err
}

func (s syncStore) EdgeStatus(ctx context.Context, site protocol.Site, st protocol.Status) error {
	err := s.svc.RecordEdgeStatus(ctx, site, st)
	if errors.Is(err, cloud.ErrEdgeRejected) || errors.Is(err, cloud.ErrNotFound) {
		return fmt.Errorf("%w: %w", mqttsync.ErrRejected, err)
	}
	return err
}

func (s syncStore) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	return s.svc.PublishFeeds(ctx, limit, fn)
}

// cloudPassword returns the shared password of svc-cloud's own broker
// connections.
func cloudPassword(ctx context.Context, svc *cloud.Service) (string, error) {
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

// authenticator lets svc-cloud's processes in as the cloud and each edge
// in as itself, onto its own site's topics.
func authenticator(svc *cloud.Service, cloudPass string) broker.Authenticator {
	return broker.AuthenticatorFunc(func(ctx context.Context, username, password string) (broker.Access, error) {
		if username == cloudUsername {
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

// syncParts returns the parts that connect svc-cloud to its edges: the
// embedded broker unless an external one is configured, and the cloud half
// of the sync. Each is a Run(ctx) error.
func syncParts(ctx context.Context, cfg *Config, svc *cloud.Service, log *slog.Logger) ([]func(context.Context) error, string, error) {
	if cfg.MQTTURL == "off" {
		return nil, "", nil
	}
	var parts []func(context.Context) error
	url, user, pass := cfg.MQTTURL, cfg.MQTTUsername, cfg.MQTTPassword
	if url == "" {
		p, err := cloudPassword(ctx, svc)
		if err != nil {
			return nil, "", err
		}
		b, err := broker.New(broker.Config{Listen: cfg.MQTTListen, Auth: authenticator(svc, p), Logger: log.With("part", "broker")})
		if err != nil {
			return nil, "", fmt.Errorf("embedded broker on %s: %w (set --mqtt-listen, or --mqtt-url for an external broker)", cfg.MQTTListen, err)
		}
		parts = append(parts, b.Run)
		url, user, pass = "tcp://"+b.Addr(), cloudUsername, p
	}
	host, _ := os.Hostname()
	id := make([]byte, 6)
	rand.Read(id)
	half, err := mqttsync.NewCloud(mqttsync.CloudConfig{
		BrokerURL: url, Username: user, Password: pass,
		ClientID: fmt.Sprintf("svc-cloud-%s-%x", host, id),
		Store:    syncStore{svc}, Logger: log.With("part", "sync"),
	})
	if err != nil {
		return nil, "", err
	}
	svc.OnChange(half.Notify)
	parts = append(parts, half.Run)
	return parts, url, nil
}
