package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
)

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
		p, err := edgesync.CloudPassword(ctx, svc)
		if err != nil {
			return nil, "", err
		}
		b, err := broker.New(broker.Config{Listen: cfg.MQTTListen, Auth: edgesync.Authenticator(svc, p), Revoked: svc.RevokedEdges,
			Logger: log.With("part", "broker")})
		if err != nil {
			return nil, "", fmt.Errorf("embedded broker on %s: %w (set --mqtt-listen, or --mqtt-url for an external broker)", cfg.MQTTListen, err)
		}
		parts = append(parts, b.Run)
		url, user, pass = "tcp://"+b.Addr(), edgesync.CloudUsername, p
	}
	host, _ := os.Hostname()
	id := make([]byte, 6)
	rand.Read(id)
	half, err := mqttsync.NewCloud(mqttsync.CloudConfig{
		BrokerURL: url, Username: user, Password: pass,
		ClientID: fmt.Sprintf("svc-cloud-%s-%x", host, id),
		Store:    edgesync.Store{Service: svc}, Logger: log.With("part", "sync"),
	})
	if err != nil {
		return nil, "", err
	}
	svc.OnChange(half.Notify)
	parts = append(parts, half.Run)
	return parts, url, nil
}
