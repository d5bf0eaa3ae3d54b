//go:build !unix

package reader

import "errors"

var errTooManyFiles = errors.New("too many open files")
