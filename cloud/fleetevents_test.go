package cloud_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// Edge.Announcement: online at the first online status while announced
// offline; offline once revoked, silent, or offline by its will for the
// silence limit; nothing for a blip shorter than the limit.
func TestEdge_Announcement(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { at := now.Add(-d); return &at }
	for _, c := range []struct {
		name string
		e    cloud.Edge
		want string
	}{
		{"never connected", cloud.Edge{State: cloud.EdgeOffline, Announced: cloud.EdgeOffline}, ""},
		{"first online status", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(time.Second), Announced: cloud.EdgeOffline}, cloud.EdgeOnline},
		{"online, announced", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(time.Second), Announced: cloud.EdgeOnline}, ""},
		{"online status but silent since", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(cloud.EdgeSilentAfter + time.Second),
			Announced: cloud.EdgeOffline}, ""},
		{"silent for the limit", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(cloud.EdgeSilentAfter + time.Second),
			Announced: cloud.EdgeOnline}, cloud.EdgeOffline},
		{"will a minute ago", cloud.Edge{State: cloud.EdgeOffline, StateSince: ago(time.Minute), LastSeenAt: ago(time.Minute),
			Announced: cloud.EdgeOnline}, ""},
		{"will the limit ago", cloud.Edge{State: cloud.EdgeOffline, StateSince: ago(cloud.EdgeSilentAfter), LastSeenAt: ago(4 * time.Minute),
			Announced: cloud.EdgeOnline}, cloud.EdgeOffline},
		{"revoked while online", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(time.Second), RevokedAt: ago(0),
			Announced: cloud.EdgeOnline}, cloud.EdgeOffline},
		{"revoked, announced offline", cloud.Edge{State: cloud.EdgeOnline, LastSeenAt: ago(time.Second), RevokedAt: ago(0),
			Announced: cloud.EdgeOffline}, ""},
	} {
		require.Equal(t, c.want, c.e.Announcement(now), c.name)
	}
}
