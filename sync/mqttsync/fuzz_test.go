package mqttsync

import (
	"context"
	"testing"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// FuzzEdgeHandle feeds the edge arbitrary messages on its topics: none may
// crash it, and the store sees only what decodes as a protocol message.
func FuzzEdgeHandle(f *testing.F) {
	v := newVisit("V")
	f.Add(0, mustEncode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: t0, Visit: &v}}}))
	f.Add(1, mustEncode(&protocol.Reply{Kind: protocol.ReplyAck, Acks: []string{ids.New(ids.Fact)}}))
	f.Add(1, mustEncode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r", Snapshot: &protocol.Snapshot{Seq: 3, Part: 1, Parts: 1}}))
	f.Add(1, []byte(`{"v":1,"kind":"changes","request_id":"r","changes":[{"seq":1}]}`))
	f.Add(2, []byte("{"))
	f.Fuzz(func(t *testing.T, which int, payload []byte) {
		e, store, rec := newTestEdge(t)
		e.requestResync(rec) // an outstanding request, so replies are taken
		topics := []string{e.cfg.Site.Changes(), e.cfg.Site.Replies(e.cfg.EdgeID), e.cfg.Site.Facts(e.cfg.EdgeID)}
		topic := topics[(which%len(topics)+len(topics))%len(topics)]
		e.handle(rec, message{topic, payload})
		var b protocol.Batch
		var r protocol.Reply
		valid := protocol.Decode(payload, &b) == nil || protocol.Decode(payload, &r) == nil
		if !valid && (store.Seq() != 0 || len(store.acked) != 0 || len(store.snapshots) != 0) {
			t.Fatalf("an invalid message on %s reached the store", topic)
		}
	})
}

// FuzzCloudMessages feeds the cloud half arbitrary facts, resync requests
// and statuses: none may crash it, and the store sees only valid ones.
func FuzzCloudMessages(f *testing.F) {
	edge := ids.New(ids.Edge)
	fe := newFakeEdge(edge)
	fe.record(1)
	facts, _ := fe.Outbox(0)
	f.Add(0, mustEncode(&facts[0]))
	f.Add(1, mustEncode(&protocol.ResyncRequest{RequestID: "r", After: 3}))
	f.Add(2, mustEncode(&protocol.Status{EdgeID: edge, State: "online", At: t0}))
	f.Add(2, []byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, which int, payload []byte) {
		store := newFakeCloud()
		site := newSite()
		store.addEdge(site, edge)
		store.addVisits(site, 3)
		c, _ := newTestCloud(t, store)
		ctx := context.Background()
		switch (which%3 + 3) % 3 {
		case 0:
			c.applyFacts(ctx, []message{{site.Facts(edge), payload}}, func(ackKey, string, uint64) {})
			var fact protocol.Fact
			if protocol.Decode(payload, &fact) != nil && store.callCount() != 0 {
				t.Fatal("an invalid fact reached the store")
			}
		case 1:
			c.answerResync(ctx, message{site.Resync(edge), payload})
			var req protocol.ResyncRequest
			if protocol.Decode(payload, &req) != nil && len(store.resyncAfters()) != 0 {
				t.Fatal("an invalid request reached the store")
			}
		case 2:
			c.recordStatus(ctx, message{site.Status(edge), payload})
			var st protocol.Status
			if protocol.Decode(payload, &st) != nil && len(store.statuses) != 0 {
				t.Fatal("an invalid status reached the store")
			}
		}
	})
}

func mustEncode[M protocol.Message](m M) []byte {
	b, err := protocol.Encode(m)
	if err != nil {
		panic(err)
	}
	return b
}
