package broker

import "errors"

// ErrConfig is returned by New when the configuration is unusable; the
// error names the field.
var ErrConfig = errors.New("broker: invalid configuration")
