// Command init is PID 1 of the spike image: gokrazy's Boot and supervisor.
package main

import (
	"log"
	"os/exec"

	"github.com/gokrazy/gokrazy"
)

func main() {
	if err := gokrazy.Boot("spike"); err != nil {
		log.Printf("boot: %v", err)
	}
	svcs := []*gokrazy.Service{
		gokrazy.NewService(exec.Command("/user/abhello")),
		gokrazy.NewService(exec.Command("/gokrazy/dhcp")),
	}
	if err := gokrazy.SuperviseServices(svcs); err != nil {
		log.Fatal(err)
	}
	select {}
}
