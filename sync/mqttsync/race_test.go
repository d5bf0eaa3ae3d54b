//go:build race

package mqttsync

const raceEnabled = true
