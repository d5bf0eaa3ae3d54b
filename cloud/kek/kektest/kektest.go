// Package kektest gives tests and load programs a key-encryption key: the
// same one every time, so a store reopened in a test opens what it sealed.
// Never use it for data that matters.
//
// It may import cloud/kek and the standard library.
package kektest

import (
	"crypto/sha256"

	"github.com/svc-vms/svc/cloud/kek"
)

// Key is the fixed test KEK.
var Key = func() []byte {
	sum := sha256.Sum256([]byte("svc kektest: not a secret"))
	return sum[:]
}()

// Ring returns a Ring holding Key alone.
func Ring() *kek.Ring {
	r, err := kek.New(Key)
	if err != nil {
		panic(err)
	}
	return r
}
