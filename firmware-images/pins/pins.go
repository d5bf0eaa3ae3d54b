//go:build pins

// Package pins keeps the kernel and firmware modules in go.mod and go.sum:
// mkimage.sh copies files out of them and builds cmd/dhcp and cmd/ntp; nothing imports them.
package pins

import (
	_ "github.com/gokrazy/firmware"
	_ "github.com/gokrazy/gokrazy/cmd/dhcp"
	_ "github.com/gokrazy/gokrazy/cmd/ntp"
	_ "github.com/gokrazy/kernel.arm64"
	_ "github.com/gokrazy/kernel.rpi"
)
