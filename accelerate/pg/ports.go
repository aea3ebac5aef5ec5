package pg

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// ErrPortInUse is matched (errors.Is) by the error returned when a listen
// address is already taken.
var ErrPortInUse = errors.New("pg: port already in use")

// PortInUseError reports that Addr could not be bound because its port is
// taken by another process.
type PortInUseError struct {
	Addr string // host:port that was requested
	Port string
	Err  error // the underlying listen error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("pg: port %s is already in use (listening on %s: another launch or process holds it); stop that process, choose another port, or pass UsePort \"0\" to pick a free one", e.Port, e.Addr)
}

// Is makes errors.Is(err, ErrPortInUse) true.
func (e *PortInUseError) Is(target error) bool { return target == ErrPortInUse }

// Unwrap returns the underlying listen error.
func (e *PortInUseError) Unwrap() error { return e.Err }

// Listen listens on TCP addr ("host:port"; port "0" picks a free port) and
// turns "address already in use" into a *PortInUseError.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			_, port, _ := net.SplitHostPort(addr)
			return nil, &PortInUseError{Addr: addr, Port: port, Err: err}
		}
		return nil, fmt.Errorf("pg: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// CheckPort reports whether host:port can be listened on right now: nil if
// free, a *PortInUseError if taken. The answer can be stale by the time the
// caller binds; prefer NewStore with port "0" and Store.Addr when possible.
func CheckPort(host, port string) error {
	ln, err := Listen(net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	return ln.Close()
}

// FreePort asks the kernel for a currently free TCP port on host.
func FreePort(host string) (int, error) {
	ln, err := Listen(net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	_, p, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("pg: free port: %w", err)
	}
	return strconv.Atoi(p)
}
