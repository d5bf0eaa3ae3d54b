//go:build svcfault

package main

import (
	"errors"
	"os"
	"time"
)

// fault is set with -ldflags "-X main.fault=crash|unhealthy" in a build
// with the svcfault tag, which the update tests make: a release that
// crashes as it starts, or one whose health check fails. No release is
// built with the tag.
var fault string

// faultWait names a file an unhealthy build's health check waits for
// before it fails, so that a test can scan at the release on trial first.
const faultWait = "SVC_EDGE_FAULT_WAIT"

func faultAtStart() {
	if fault == "crash" {
		panic("svcfault: this build crashes at start")
	}
}

func faultHealth() error {
	if fault != "unhealthy" {
		return nil
	}
	if path := os.Getenv(faultWait); path != "" {
		for {
			if _, err := os.Stat(path); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond) // a test build's poll for the test's signal
		}
	}
	return errors.New("svcfault: this build fails its health check")
}
