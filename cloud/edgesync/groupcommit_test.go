package edgesync_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

// heldStore is the cloud half's store with its first ApplyFacts call held
// (before it reaches the store) until release is closed; it records each
// call's facts and the facts committed (ApplyFacts returned).
type heldStore struct {
	edgesync.Store
	held, release chan struct{}

	mu        sync.Mutex
	calls     [][]string
	committed map[string]bool
}

func (s *heldStore) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	s.mu.Lock()
	var batch []string
	for _, f := range facts {
		batch = append(batch, f.ID)
	}
	s.calls = append(s.calls, batch)
	first := len(s.calls) == 1
	s.mu.Unlock()
	if first {
		close(s.held)
		<-s.release
	}
	errs, err := s.Store.ApplyFacts(ctx, site, facts)
	if err == nil {
		s.mu.Lock()
		for i, f := range facts {
			if errs[i] == nil {
				s.committed[f.ID] = true
			}
		}
		s.mu.Unlock()
	}
	return errs, err
}

// The facts that arrive while a batch is being applied wait, and go into
// the next ApplyFacts call together (group commit); no fact is
// acknowledged before the call that applies it has committed. The real
// stores, the embedded broker and the cloud half as svc-cloud runs it; the
// edge is an MQTT client with the edge's credentials.
func TestCloudHalf_GroupCommitAcksAfterCommit(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		ctx := t.Context()
		svc := cloud.NewService(store, time.Now)
		res, err := svc.Seed(ctx, "Acme", cloud.PlanPro)
		require.NoError(t, err)
		tn := cloud.Tenant{OrgID: res.Organisation.ID, Mode: cloud.ModeTest}
		s := res.Test.Sites[0]
		site := cloud.EdgeSite(tn, s.ID)
		edge, secret, err := svc.CreateEdge(ctx, tn, s.ID, "")
		require.NoError(t, err)

		pass, err := edgesync.CloudPassword(ctx, svc)
		require.NoError(t, err)
		br, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Auth: edgesync.Authenticator(svc, pass)})
		require.NoError(t, err)
		bctx, stopBroker := context.WithCancel(context.Background())
		brDone := make(chan struct{})
		go func() { defer close(brDone); _ = br.Run(bctx) }()
		t.Cleanup(func() { stopBroker(); <-brDone })

		hs := &heldStore{Store: edgesync.Store{Service: svc}, held: make(chan struct{}), release: make(chan struct{}), committed: map[string]bool{}}
		half, err := mqttsync.NewCloud(mqttsync.CloudConfig{BrokerURL: "tcp://" + br.Addr(), Username: edgesync.CloudUsername,
			Password: pass, ClientID: "svc-cloud-test", Store: hs})
		require.NoError(t, err)
		hctx, stopHalf := context.WithCancel(context.Background())
		halfDone := make(chan struct{})
		go func() { defer close(halfDone); _ = half.Run(hctx) }()
		released := false
		t.Cleanup(func() {
			if !released {
				close(hs.release)
			}
			stopHalf()
			<-halfDone
		})
		require.Eventually(t, func() bool { return half.State().Connected }, 10*time.Second, 5*time.Millisecond)

		// The edge: acknowledgements are checked against the commits as
		// they arrive.
		var mu sync.Mutex
		var acked []string
		var early []string
		opts := paho.NewClientOptions().AddBroker("tcp://" + br.Addr()).SetClientID(edge.ID).
			SetUsername(edge.Username).SetPassword(secret).SetProtocolVersion(4).SetCleanSession(true).
			SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
				var r protocol.Reply
				if protocol.Decode(m.Payload(), &r) != nil || r.Kind != protocol.ReplyAck {
					return
				}
				hs.mu.Lock()
				for _, id := range r.Acks {
					if !hs.committed[id] {
						early = append(early, id)
					}
				}
				hs.mu.Unlock()
				mu.Lock()
				acked = append(acked, r.Acks...)
				mu.Unlock()
			})
		cl := paho.NewClient(opts)
		tok := cl.Connect()
		require.True(t, tok.WaitTimeout(10*time.Second))
		require.NoError(t, tok.Error())
		t.Cleanup(func() { cl.Disconnect(100) })
		tok = cl.Subscribe(site.Replies(edge.ID), 1, nil)
		require.True(t, tok.WaitTimeout(10*time.Second))
		require.NoError(t, tok.Error())

		at := time.Now().UTC().Truncate(time.Microsecond)
		facts := make([]protocol.Fact, 6)
		for i := range facts {
			facts[i] = protocol.Fact{V: protocol.Version, ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: edge.ID,
				Counter: uint64(i + 1), At: at.Add(time.Duration(i) * time.Millisecond), GateID: s.Gates[0], Reason: protocol.ReasonInvalidToken}
		}
		publish := func(f protocol.Fact) {
			b, err := protocol.Encode(&f)
			require.NoError(t, err)
			tok := cl.Publish(site.Facts(edge.ID), 1, false, b)
			require.True(t, tok.WaitTimeout(10*time.Second))
			require.NoError(t, tok.Error())
		}

		publish(facts[0])
		select {
		case <-hs.held:
		case <-time.After(10 * time.Second):
			t.Fatal("the first batch was never applied")
		}
		// While the first batch is in flight, five more arrive and wait.
		for _, f := range facts[1:] {
			publish(f)
		}
		require.Eventually(t, func() bool { return half.State().FactsQueued == 5 }, 10*time.Second, 5*time.Millisecond,
			"the five facts wait in the cloud half")
		mu.Lock()
		require.Empty(t, acked, "nothing is acknowledged before its batch commits")
		mu.Unlock()

		close(hs.release)
		released = true
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) == len(facts)
		}, 10*time.Second, 5*time.Millisecond, "every fact acknowledged")

		hs.mu.Lock()
		calls := slices.Clone(hs.calls)
		hs.mu.Unlock()
		want := [][]string{{facts[0].ID}, {}}
		for _, f := range facts[1:] {
			want[1] = append(want[1], f.ID)
		}
		require.Equal(t, want, calls, "the five that waited went into one transaction")
		mu.Lock()
		require.Empty(t, early, "acknowledged before its commit")
		require.ElementsMatch(t, want[0], acked[:1])
		mu.Unlock()
		for _, f := range facts {
			ef, err := store.EdgeFact(ctx, tn, f.ID)
			require.NoError(t, err, "fact %s", f.ID)
			require.Equal(t, f.Counter, ef.Fact.Counter, fmt.Sprint(f.ID))
		}
	})
}
