package pg

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// ErrClosed is returned by operations on a closed Group.
var ErrClosed = errors.New("pg: process group is closed")

// ErrMismatch is wrapped when ranks call different collectives (or the same
// collective with incompatible lengths or roots).
var ErrMismatch = errors.New("pg: collective mismatch")

// RankError names the rank whose silence or disappearance failed an
// operation.
type RankError struct {
	Rank    int           // the rank that failed to answer
	Op      string        // "join", "barrier", "all_reduce", ...
	Timeout time.Duration // non-zero when the rank did not answer in time
	Err     error         // underlying cause
}

func (e *RankError) Error() string {
	switch {
	case e.Op == "join" && e.Timeout > 0:
		return fmt.Sprintf("pg: rank %d did not join within %s", e.Rank, e.Timeout)
	case e.Op == "join":
		return fmt.Sprintf("pg: rank %d could not be reached while joining: %v", e.Rank, e.Err)
	case e.Timeout > 0:
		return fmt.Sprintf("pg: rank %d did not answer within %s during %s", e.Rank, e.Timeout, e.Op)
	case isClosedConn(e.Err):
		return fmt.Sprintf("pg: rank %d closed its connection during %s", e.Rank, e.Op)
	default:
		return fmt.Sprintf("pg: rank %d failed during %s: %v", e.Rank, e.Op, e.Err)
	}
}

// Unwrap returns the underlying cause.
func (e *RankError) Unwrap() error { return e.Err }

// MissingRanksError reports ranks that did not join within the timeout.
type MissingRanksError struct {
	Ranks   []int
	Timeout time.Duration
}

func (e *MissingRanksError) Error() string {
	if len(e.Ranks) == 1 {
		return fmt.Sprintf("pg: rank %d did not join within %s", e.Ranks[0], e.Timeout)
	}
	return fmt.Sprintf("pg: ranks %v did not join within %s", e.Ranks, e.Timeout)
}

// Is makes errors.Is(err, os.ErrDeadlineExceeded) true.
func (e *MissingRanksError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
