package mqttsync

import "errors"

var (
	// ErrRejected is wrapped by a fact's error from a CloudStore's
	// ApplyFacts when the fact can never be applied (an unknown edge, an
	// edge of another site): the cloud half does not acknowledge it, so
	// the edge keeps it and nothing is lost, and logs it. Any other error
	// is taken as transient and the edge's republication retries it.
	ErrRejected = errors.New("mqttsync: fact rejected")

	// ErrConfig is returned by NewEdge and NewCloud when a configuration
	// is unusable; the error names the field.
	ErrConfig = errors.New("mqttsync: invalid configuration")

	// errNotConnected is returned by a publication while the cloud half
	// has no connection.
	errNotConnected = errors.New("mqttsync: not connected to the broker")
)
