package mqttsync

import "sync"

// message is one MQTT message as the client received it.
type message struct {
	topic   string
	payload []byte
}

// inbox is the queue between a paho callback and the goroutine that
// handles its messages. A paho callback must never block (paho issue 427:
// a blocked handler stops the client reading, so acknowledgements and
// pings stall and the connection deadlocks), so push never waits: past
// limit messages or maxBytes of payload it drops the message, which the
// protocol recovers from (a change by a resync, a fact by the edge's
// republication).
type inbox struct {
	limit    int
	maxBytes int
	ready    chan struct{} // signalled when items are waiting

	mu      sync.Mutex
	items   []message
	bytes   int
	dropped uint64
}

func newInbox(limit, maxBytes int) *inbox {
	return &inbox{limit: limit, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// push queues m without blocking, reporting false when the inbox is full.
func (q *inbox) push(m message) bool {
	q.mu.Lock()
	if len(q.items) >= q.limit || q.bytes+len(m.payload) > q.maxBytes {
		q.dropped++
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, m)
	q.bytes += len(m.payload)
	q.mu.Unlock()
	q.signal()
	return true
}

func (q *inbox) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes up to max messages (all when max ≤ 0), oldest first. When
// some remain it signals ready again, so another taker wakes.
func (q *inbox) take(max int) []message {
	q.mu.Lock()
	n := len(q.items)
	if max > 0 && max < n {
		n = max
	}
	out := make([]message, n)
	copy(out, q.items)
	for _, m := range out {
		q.bytes -= len(m.payload)
	}
	rest := copy(q.items, q.items[n:])
	clear(q.items[rest:])
	q.items = q.items[:rest]
	q.mu.Unlock()
	if rest > 0 {
		q.signal()
	}
	return out
}

// droppedCount is how many messages push has dropped.
func (q *inbox) droppedCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// len is how many messages wait.
func (q *inbox) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
