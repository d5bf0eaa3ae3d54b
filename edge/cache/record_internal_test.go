package cache

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// TestAppendRow_AsJSONMarshal: an outbox row appended to a buffer is the
// row json.Marshal makes of an outboxRow, byte for byte, so files written
// before and after issue 20 hold the same rows.
func TestAppendRow_AsJSONMarshal(t *testing.T) {
	f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: time.Date(2026, 3, 2, 10, 0, 0, 123000, time.UTC),
		EdgeID: ids.New(ids.Edge), GateID: ids.New(ids.Gate), Reason: protocol.ReasonInvalidToken, Counter: 7}
	raw, err := protocol.Encode(&f)
	require.NoError(t, err)
	for _, visits := range [][]string{nil, {ids.New(ids.Visit)}, {ids.New(ids.Visit), ids.New(ids.Visit)}} {
		want, err := json.Marshal(outboxRow{Fact: raw, Visits: visits})
		require.NoError(t, err)
		prefix := []byte("kept")
		got := appendRow(prefix, raw, visits)
		require.Equal(t, string(want), string(got[len(prefix):]))
		require.Equal(t, "kept", string(got[:len(prefix)]))
	}
}
