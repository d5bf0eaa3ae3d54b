package sitetest_test

import (
	"os"
	"testing"

	"github.com/svc-vms/svc/edge/sitetest"
)

// TestMain lets the kill -9 test run this binary as an edge.
func TestMain(m *testing.M) {
	sitetest.MainChild()
	os.Exit(m.Run())
}
