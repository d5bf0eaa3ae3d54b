//go:build !svcfault

package main

// faultAtStart and faultHealth make a build misbehave for the update
// tests (faults_svcfault.go); a build without the svcfault tag, every
// release, has neither.
func faultAtStart() {}

func faultHealth() error { return nil }
