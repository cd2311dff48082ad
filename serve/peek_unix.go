//go:build unix

package serve

import (
	"net"
	"syscall"
)

// spoke reports whether the client of c has sent bytes the server has
// not read yet, or has closed its end: a client whose request is waiting
// to be read (and so about to present its key), or one that is gone. It
// asks the kernel without reading or waiting.
func spoke(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	var n int
	var rerr error
	// Control, not Read: the server's own read may be waiting on c, and
	// holds the read lock Read would wait for.
	if err := raw.Control(func(fd uintptr) {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return false
	}
	return rerr == nil && n > 0
}
