module github.com/svc-vms/svc/firmware-images

go 1.24

require (
	github.com/gokrazy/firmware v0.0.0-20260522070551-527ce0ed43cf
	github.com/gokrazy/gokrazy v0.0.0-20260418085648-c38c3134b8a7
	github.com/gokrazy/kernel.arm64 v0.0.0-20260705071517-37841c4d6ff1
	github.com/gokrazy/kernel.rpi v0.0.0-20251127164438-9778ec0261de
	golang.org/x/sys v0.31.0
)

require (
	github.com/beevik/ntp v0.3.0 // indirect
	github.com/gokrazy/internal v0.0.0-20240629150625-a0f1dee26ef5 // indirect
	github.com/google/gopacket v1.1.19 // indirect
	github.com/google/renameio/v2 v2.0.0 // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/kenshaw/evdev v0.1.0 // indirect
	github.com/mdlayher/packet v1.1.2 // indirect
	github.com/mdlayher/socket v0.4.1 // indirect
	github.com/mdlayher/watchdog v0.0.0-20201005150459-8bdc4f41966b // indirect
	github.com/rtr7/dhcp4 v0.0.0-20220302171438-18c84d089b46 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/vishvananda/netlink v1.1.0 // indirect
	github.com/vishvananda/netns v0.0.0-20211101163701-50045581ed74 // indirect
	golang.org/x/net v0.38.0 // indirect
	golang.org/x/sync v0.5.0 // indirect
)
