package sitetest_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/hardware"
)

// Hardware configured in the cloud reaches an svc-edge child process over
// its site's feed, on both brokers and both stores: the entrance's reader
// moves to another port, the old port closes, and a pass read on the new
// one opens the gate, its check-in reaching the cloud.
func TestEdge_HardwareFromCloud(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		c := e.StartChild(t)
		v := w.NewVisit(t)
		tok := w.Token(t, v.ID)
		sitetest.Eventually(t, settle, func() bool { return c.Status(t).Seq >= w.Head(t) }, "the edge did not sync")
		old := strings.TrimPrefix(readerOf(t, c.Status(t), w.Entry), "tcp ")

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		moved := ln.Addr().String()
		require.NoError(t, ln.Close())
		doc := hardware.Document{Gates: []hardware.Gate{
			{ID: w.Entry, Readers: []hardware.Reader{{Kind: "tcp", Listen: moved}}, Relay: hardware.Relay{Pin: "SIM17", Pulse: time.Millisecond},
				WhenStale: hardware.FailSecure},
			{ID: w.Exit, Readers: []hardware.Reader{{Kind: "camera"}}, Relay: hardware.Relay{Pin: "SIM22", Pulse: time.Millisecond},
				WhenStale: hardware.FailSecure},
		}}
		_, err = w.Svc().UpdateEdge(t.Context(), w.Tenant, e.ID, cloud.EdgeInput{Hardware: cloud.Some(&doc)})
		require.NoError(t, err)

		sitetest.Eventually(t, settle, func() bool {
			st := c.Status(t)
			return st.Hardware.Source == edge.SourceCloud && readerOf(t, st, w.Entry) == "tcp "+moved
		}, "the appliance did not take the cloud's hardware")
		require.Empty(t, c.Status(t).Hardware.Error)
		_, err = net.DialTimeout("tcp", old, time.Second)
		require.Error(t, err, "the old reader's port is closed")

		conn, err := net.DialTimeout("tcp", moved, 5*time.Second)
		require.NoError(t, err)
		_, err = io.WriteString(conn, tok+"\n")
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		sitetest.Eventually(t, settle, func() bool { return w.Visit(t, v.ID).Status == cloud.VisitCheckedIn },
			"the pass read on the moved reader did not check the visitor in")
	})
}

// readerOf is the first reader of the gate as the appliance's status says.
func readerOf(t *testing.T, st edge.StatusResponse, gateID string) string {
	t.Helper()
	for _, g := range st.Gates {
		if g.GateID == gateID && len(g.Readers) > 0 {
			return g.Readers[0]
		}
	}
	t.Fatalf("the status shows no reader at gate %s: %+v", gateID, st.Gates)
	return ""
}
