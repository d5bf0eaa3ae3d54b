//go:build !linux

package main

import "errors"

// rebootSystem: the image's A/B partitions are Linux only.
func rebootSystem(string) error { return errors.New("supervise: rebooting is supported on Linux only") }
