package protocol_test

import (
	"testing"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// FuzzParseTopic: any text parses as a topic of the protocol only when it
// is exactly the topic its parts name (so no two texts name one topic, and
// no wildcard, empty level or extra level slips through), and never panics.
func FuzzParseTopic(f *testing.F) {
	site := protocol.Site{Mode: "live", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
	edge := ids.New(ids.Edge)
	for _, s := range []string{site.Changes(), site.Facts(edge), site.Resync(edge), site.Replies(edge), site.Status(edge),
		site.EdgeFilter(), site.Prefix(), site.Changes() + "/", "svc/v1/+/+/sites/+/changes", "svc/v1/#", "",
		"svc//v1", site.Facts("+"), site.Prefix() + "/edges/" + edge + "/facts/extra"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		s, kind, edgeID, err := protocol.ParseTopic(topic)
		if err != nil {
			return
		}
		if !s.Valid() {
			t.Fatalf("%q parsed to an invalid site %+v", topic, s)
		}
		var again string
		switch kind {
		case protocol.KindChanges:
			again = s.Changes()
		case protocol.KindFacts:
			again = s.Facts(edgeID)
		case protocol.KindResync:
			again = s.Resync(edgeID)
		case protocol.KindReplies:
			again = s.Replies(edgeID)
		case protocol.KindStatus:
			again = s.Status(edgeID)
		default:
			t.Fatalf("%q parsed to kind %q", topic, kind)
		}
		if again != topic {
			t.Fatalf("%q parsed to %+v %s %s, which is the topic %q", topic, s, kind, edgeID, again)
		}
		if kind != protocol.KindChanges && !ids.Valid(ids.Edge, edgeID) {
			t.Fatalf("%q names edge %q", topic, edgeID)
		}
	})
}
