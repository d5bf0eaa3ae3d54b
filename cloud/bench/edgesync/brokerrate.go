package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/svc-vms/svc/cloud/bench/benchutil"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// brokerRate is the broker's own rate for the drain's messages: payloads
// (encoded facts) are published at QoS 1 by one client and read by
// another, subscribed at QoS 1, through the broker at url, with at most
// window of them unacknowledged end to end, as the edge half keeps its
// outbox (mqttsync.EdgeConfig.Window). The reader acknowledges what it
// has received at once, in protocol.Reply acks of up to protocol.MaxAcks
// on a topic the publisher reads: the protocol's round trip with no store
// on either side and no acknowledgement delay. The clients are set up as
// the sync's (MQTT 3.1.1, in-order delivery). It returns the time from
// the first publication to the last acknowledgement.
func brokerRate(ctx context.Context, url string, payloads [][]byte, window int) (time.Duration, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tag := hex.EncodeToString(rnd[:])
	factsTopic, acksTopic := "edgesync-bench/"+tag+"/facts", "edgesync-bench/"+tag+"/acks"
	n := len(payloads)

	connect := func(id string, onMessage paho.MessageHandler) (paho.Client, error) {
		opts := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetProtocolVersion(4).
			SetCleanSession(true).SetAutoReconnect(false).SetOrderMatters(true).
			SetKeepAlive(30 * time.Second).SetConnectTimeout(10 * time.Second).SetWriteTimeout(10 * time.Second).
			SetDefaultPublishHandler(onMessage)
		c := paho.NewClient(opts)
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return nil, fmt.Errorf("connect %s: %v", id, tok.Error())
		}
		return c, nil
	}
	subscribe := func(c paho.Client, topic string) error {
		if tok := c.Subscribe(topic, 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return fmt.Errorf("subscribe %s: %v", topic, tok.Error())
		}
		return nil
	}

	// The reader: a paho callback never blocks (as mqttsync's inbox), so
	// the IDs go to a goroutine that acknowledges whatever waits.
	var mu sync.Mutex
	var got []string
	ready := make(chan struct{}, 1)
	reader, err := connect("edgesync-bench-sub-"+tag, func(_ paho.Client, m paho.Message) {
		var f protocol.Fact
		if err := protocol.Decode(m.Payload(), &f); err != nil {
			return
		}
		mu.Lock()
		got = append(got, f.ID)
		mu.Unlock()
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return 0, err
	}
	defer reader.Disconnect(100)
	if err := subscribe(reader, factsTopic); err != nil {
		return 0, err
	}

	// The publisher: a window of slots, freed by the acknowledgements.
	slots := make(chan struct{}, window)
	acked := make(chan int, 1024)
	pub, err := connect("edgesync-bench-pub-"+tag, func(_ paho.Client, m paho.Message) {
		var r protocol.Reply
		if err := protocol.Decode(m.Payload(), &r); err == nil {
			acked <- len(r.Acks)
		}
	})
	if err != nil {
		return 0, err
	}
	defer pub.Disconnect(100)
	if err := subscribe(pub, acksTopic); err != nil {
		return 0, err
	}

	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { // acknowledge
		for {
			select {
			case <-actx.Done():
				return
			case <-ready:
			}
			mu.Lock()
			todo := got
			got = nil
			mu.Unlock()
			for len(todo) > 0 {
				k := min(len(todo), protocol.MaxAcks)
				b, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplyAck, Acks: todo[:k]})
				if err == nil {
					reader.Publish(acksTopic, 1, false, b)
				}
				todo = todo[k:]
			}
		}
	})
	done := make(chan struct{})
	wg.Go(func() { // count the acknowledgements, free the slots
		total := 0
		for total < n {
			select {
			case <-actx.Done():
				return
			case k := <-acked:
				total += k
				for range k {
					<-slots
				}
			}
		}
		close(done)
	})

	start := time.Now()
	for _, p := range payloads {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		pub.Publish(factsTopic, 1, false, p)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(5 * time.Minute):
		return 0, errors.New("broker rate: not every message was acknowledged in 5 minutes")
	}
	return time.Since(start), nil
}

// factPayloads encodes facts as the edge half publishes them.
func factPayloads(facts []protocol.Fact) ([][]byte, error) {
	out := make([][]byte, len(facts))
	for i := range facts {
		b, err := protocol.Encode(&facts[i])
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// brokerOnly is -scenario broker: the broker's own rate for n check-in
// facts like the drain's, without stores.
func (b *bench) brokerOnly(ctx context.Context) error {
	if b.o.broker == "embedded" {
		return errors.New("-scenario broker needs -broker URL (an anonymous broker)")
	}
	edgeID, gateID := ids.New(ids.Edge), ids.New(ids.Gate)
	at := time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Microsecond)
	facts := make([]protocol.Fact, b.o.n)
	for i := range facts {
		v := ids.New(ids.Visit)
		facts[i] = protocol.Fact{ID: ids.New(ids.Fact), EdgeID: edgeID, Counter: uint64(i + 1),
			Kind: protocol.FactCheckIn, At: at.Add(time.Duration(i) * 10 * time.Microsecond), GateID: gateID, VisitID: v, PassVisitID: v}
	}
	payloads, err := factPayloads(facts)
	if err != nil {
		return err
	}
	load := benchutil.LoadAvg()
	d, err := brokerRate(ctx, b.o.broker, payloads, b.o.window)
	if err != nil {
		return err
	}
	b.result("broker", "messages", len(payloads), "window", b.o.window, "seconds", d,
		"msgs_per_s", float64(len(payloads))/d.Seconds(), "load", fmt.Sprintf("%q", load))
	return nil
}
