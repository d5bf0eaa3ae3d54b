package cache_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

func hardwareDoc(listen string) *hardware.Document {
	doc := &hardware.Document{Gates: []hardware.Gate{{ID: gateID, Readers: []hardware.Reader{{Kind: hardware.TCP, Listen: listen}},
		Relay: hardware.Relay{Pin: "GPIO17"}}}}
	doc.Defaults()
	return doc
}

// closed reports whether ch is closed now.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// This edge's hardware from the feed is in the View and the file, and
// HardwareChanged says so; another edge's is passed over (its sequence
// applied); null clears it.
func TestApply_Hardware(t *testing.T) {
	c, path := newCache(t)
	_, ok := c.View().Hardware()
	require.False(t, ok, "none until the cloud sends one")
	ch := c.HardwareChanged()

	doc := hardwareDoc("127.0.0.1:9001")
	apply(t, c, 1, protocol.EdgeHardware{EdgeID: edgeID, Hardware: doc})
	require.True(t, closed(ch), "HardwareChanged is closed by the change")
	got, ok := c.View().Hardware()
	require.True(t, ok)
	require.Equal(t, *doc, got)
	got.Gates[0].Relay.Pin = "GPIO99"
	again, _ := c.View().Hardware()
	require.Equal(t, "GPIO17", again.Gates[0].Relay.Pin, "the document returned is the caller's")

	ch = c.HardwareChanged()
	apply(t, c, 2, protocol.EdgeHardware{EdgeID: ids.New(ids.Edge), Hardware: hardwareDoc("127.0.0.1:9009")},
		protocol.Gate{ID: gateID, Name: "Main", Direction: "entry"})
	require.False(t, closed(ch), "another edge's hardware changes nothing")
	require.Equal(t, uint64(3), c.View().Seq())
	got, _ = c.View().Hardware()
	require.Equal(t, *doc, got)

	c = reopen(t, c, path)
	got, ok = c.View().Hardware()
	require.True(t, ok, "kept across a restart")
	require.Equal(t, *doc, got)

	ch = c.HardwareChanged()
	apply(t, c, 4, protocol.EdgeHardware{EdgeID: edgeID})
	require.True(t, closed(ch))
	_, ok = c.View().Hardware()
	require.False(t, ok, "cleared: the file's gates again")
	c = reopen(t, c, path)
	_, ok = c.View().Hardware()
	require.False(t, ok)
}

// A snapshot brings this edge's hardware, and one without it clears what
// the cache held; a snapshot's hardware in two parts is refused.
func TestReplaceSnapshot_Hardware(t *testing.T) {
	c, path := newCache(t)
	doc := hardwareDoc("127.0.0.1:9001")
	parts := snapshot(10, 10, nil, nil, nil, nil)
	parts[0].Hardware = &protocol.EdgeHardware{EdgeID: edgeID, Hardware: doc}
	ch := c.HardwareChanged()
	require.NoError(t, c.ReplaceSnapshot(parts))
	require.True(t, closed(ch))
	got, ok := c.View().Hardware()
	require.True(t, ok)
	require.Equal(t, *doc, got)
	c = reopen(t, c, path)
	_, ok = c.View().Hardware()
	require.True(t, ok)

	ch = c.HardwareChanged()
	require.NoError(t, c.ReplaceSnapshot(snapshot(11, 10, nil, nil, nil, nil)))
	require.True(t, closed(ch))
	_, ok = c.View().Hardware()
	require.False(t, ok, "the cloud holds none now")

	two := snapshot(12, 1, nil, nil, nil, []protocol.Visit{newVisit(), newVisit()})
	require.Len(t, two, 2)
	for i := range two {
		two[i].Hardware = &protocol.EdgeHardware{EdgeID: edgeID, Hardware: doc}
	}
	require.ErrorIs(t, c.ReplaceSnapshot(two), protocol.ErrInvalid)
}

// The hardware is a key of the meta bucket: no schema change, so a
// release on trial (KeepSchema) opens a file holding it, and a file from
// before it opens with none.
func TestOpen_HardwareNeedsNoMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	c, err := cache.Open(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	_, ok := c.View().Hardware()
	require.False(t, ok)
	apply(t, c, 1, protocol.EdgeHardware{EdgeID: edgeID, Hardware: hardwareDoc("127.0.0.1:9001")})
	require.NoError(t, c.Close())
	c, err = cache.Open(path, cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.NoError(t, err)
	defer c.Close()
	_, ok = c.View().Hardware()
	require.True(t, ok)
}
