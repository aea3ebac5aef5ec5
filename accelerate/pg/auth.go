package pg

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrAuth is wrapped by the errors returned when the two sides of a
// connection do not share the launch secret.
var ErrAuth = errors.New("pg: authentication failed")

const (
	handshakeMagic   = "GOACCEL1"
	nonceLen         = 32
	macLen           = sha256.Size
	handshakeTimeout = 10 * time.Second

	statusOK     = 0
	statusReject = 1
)

func authMAC(secret []byte, role, label string, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(handshakeMagic))
	m.Write([]byte(role))
	m.Write([]byte{0})
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write(nonce)
	return m.Sum(nil)
}

func newNonce() ([]byte, error) {
	n := make([]byte, nonceLen)
	if _, err := rand.Read(n); err != nil {
		return nil, fmt.Errorf("pg: reading random nonce: %w", err)
	}
	return n, nil
}

// rejectError is returned by serverHandshake when the client failed to prove
// it knows the secret; the reason is meant for the accepting side's log.
type rejectError struct{ reason string }

func (e *rejectError) Error() string { return e.reason }

// serverHandshake authenticates the client on the accepting side of conn.
// Protocol (label separates the store from the data plane):
//
//	S→C  "GOACCEL1" nonceS
//	C→S  HMAC(secret, "client"|label|nonceS) nonceC
//	S→C  0 HMAC(secret, "server"|label|nonceC)   or   1 len16 reason
func serverHandshake(conn net.Conn, secret []byte, label string) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	nonceS, err := newNonce()
	if err != nil {
		return err
	}
	if _, err := conn.Write(append([]byte(handshakeMagic), nonceS...)); err != nil {
		return fmt.Errorf("pg: handshake write: %w", err)
	}
	buf := make([]byte, macLen+nonceLen)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return fmt.Errorf("pg: handshake read: %w", err)
	}
	if !hmac.Equal(buf[:macLen], authMAC(secret, "client", label, nonceS)) {
		reason := "wrong launch secret"
		msg := []byte{statusReject, 0, 0}
		binary.LittleEndian.PutUint16(msg[1:], uint16(len(reason)))
		_, _ = conn.Write(append(msg, reason...))
		return &rejectError{reason: reason}
	}
	reply := append([]byte{statusOK}, authMAC(secret, "server", label, buf[macLen:])...)
	if _, err := conn.Write(reply); err != nil {
		return fmt.Errorf("pg: handshake write: %w", err)
	}
	return nil
}

// clientHandshake proves knowledge of the secret to the accepting side and
// checks that the accepting side knows it too. what names the other side in
// error messages ("store 127.0.0.1:29500", "rank 0").
func clientHandshake(conn net.Conn, secret []byte, label, what string, deadline time.Time) error {
	if d := time.Now().Add(handshakeTimeout); deadline.IsZero() || d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	hello := make([]byte, len(handshakeMagic)+nonceLen)
	if _, err := io.ReadFull(conn, hello); err != nil {
		return fmt.Errorf("pg: handshake with %s: %w", what, err)
	}
	if string(hello[:len(handshakeMagic)]) != handshakeMagic {
		return fmt.Errorf("pg: handshake with %s: not a goaccel endpoint (bad greeting %q)", what, hello[:len(handshakeMagic)])
	}
	nonceC, err := newNonce()
	if err != nil {
		return err
	}
	msg := append(authMAC(secret, "client", label, hello[len(handshakeMagic):]), nonceC...)
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("pg: handshake with %s: %w", what, err)
	}
	status := make([]byte, 1)
	if _, err := io.ReadFull(conn, status); err != nil {
		return fmt.Errorf("pg: handshake with %s: %w", what, err)
	}
	switch status[0] {
	case statusOK:
		mac := make([]byte, macLen)
		if _, err := io.ReadFull(conn, mac); err != nil {
			return fmt.Errorf("pg: handshake with %s: %w", what, err)
		}
		if !hmac.Equal(mac, authMAC(secret, "server", label, nonceC)) {
			return fmt.Errorf("%w: %s does not know the launch secret (wrong secret or not a process of this launch)", ErrAuth, what)
		}
		return nil
	case statusReject:
		var l [2]byte
		reason := "rejected"
		if _, err := io.ReadFull(conn, l[:]); err == nil {
			r := make([]byte, binary.LittleEndian.Uint16(l[:]))
			if _, err := io.ReadFull(conn, r); err == nil {
				reason = string(r)
			}
		}
		return fmt.Errorf("%w: %s refused this process: %s", ErrAuth, what, reason)
	default:
		return fmt.Errorf("pg: handshake with %s: unexpected status %d", what, status[0])
	}
}

// AcceptAuth runs the launch-secret handshake on the accepting side of
// conn, for other connections of a launch than the store's and the ranks'
// (label tells them apart, e.g. "agent"). It returns an error wrapping
// ErrAuth when the other side does not know secret.
func AcceptAuth(conn net.Conn, secret, label string) error {
	if err := serverHandshake(conn, []byte(secret), label); err != nil {
		var rej *rejectError
		if errors.As(err, &rej) {
			return fmt.Errorf("%w: %s from %s", ErrAuth, rej.reason, conn.RemoteAddr())
		}
		return err
	}
	return nil
}

// DialAuth connects to addr and proves knowledge of secret with the
// handshake AcceptAuth expects for label; what names the other side in
// errors. ctx bounds the dial and the handshake.
func DialAuth(ctx context.Context, addr, secret, label, what string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pg: connecting to %s at %s: %w", what, addr, err)
	}
	dl, _ := ctx.Deadline()
	if err := clientHandshake(conn, []byte(secret), label, what+" ("+addr+")", dl); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
