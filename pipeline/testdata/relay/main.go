// Command relay listens on a Unix socket any user may connect to and
// relays every connection to another Unix socket: in the red-team test of
// the gateway's token, root's way to the gateway that does not go through
// the entrypoint's forwarder (as a cluster's network may give one). A
// socket in the file system, unlike one on 127.0.0.1, is reached from the
// grade's network namespace too, so only the revoke stands between the
// agent's code in the grade and the model.
//
//	relay PATH SOCKET
package main

import (
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	if err := os.Chmod(os.Args[1], 0o777); err != nil {
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", os.Args[2])
			if err != nil {
				return
			}
			defer up.Close()
			go io.Copy(up, c)
			io.Copy(c, up)
		}()
	}
}
