//go:build !race

package mqttsync

const raceEnabled = false
