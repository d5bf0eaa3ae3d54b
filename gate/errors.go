package gate

import "errors"

var (
	// ErrConfig is returned (wrapped, with the field) by New when the
	// Config is missing something or holds an ID of the wrong kind.
	ErrConfig = errors.New("gate: bad config")

	// ErrRelay is wrapped in Result.Err when an admitted scan could not
	// pulse the relay: nobody was let through and a relay_failed refusal
	// was recorded instead.
	ErrRelay = errors.New("gate: relay failed")

	// ErrRecord is wrapped in Result.Err when the scan's fact could not be
	// recorded. For an admit the relay has already let the visitor through.
	ErrRecord = errors.New("gate: record failed")
)
