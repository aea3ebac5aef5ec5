package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ConnectionInfo is a Jupyter connection file: where to bind the five
// sockets and how to sign messages.
type ConnectionInfo struct {
	Transport       string `json:"transport"` // "tcp" or "ipc"
	IP              string `json:"ip"`        // tcp: address to bind; ipc: path prefix
	ShellPort       int    `json:"shell_port"`
	ControlPort     int    `json:"control_port"`
	StdinPort       int    `json:"stdin_port"`
	IOPubPort       int    `json:"iopub_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`              // HMAC key; empty disables signing
	SignatureScheme string `json:"signature_scheme"` // "hmac-sha256"
	KernelName      string `json:"kernel_name,omitempty"`
}

// ParseConnectionFile reads and checks a connection file. Every error names
// the file and, where it is about one field, the field.
func ParseConnectionFile(path string) (ConnectionInfo, error) {
	var ci ConnectionInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return ci, fmt.Errorf("connection file %s: %w", path, err)
	}
	ci, err = parseConnection(data)
	if err != nil {
		return ci, fmt.Errorf("connection file %s: %w", path, err)
	}
	return ci, nil
}

func parseConnection(data []byte) (ConnectionInfo, error) {
	var ci ConnectionInfo
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return ci, fmt.Errorf("not valid JSON (line %d): %w", line, se)
		}
		return ci, fmt.Errorf("not a JSON object: %w", err)
	}
	str := func(name string, dst *string, required bool, def string) error {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			if required {
				return fmt.Errorf("field %q is missing", name)
			}
			*dst = def
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("field %q: want a string, got %s", name, v)
		}
		return nil
	}
	port := func(name string, dst *int) error {
		v, ok := raw[name]
		if !ok {
			return fmt.Errorf("field %q is missing", name)
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f != float64(int(f)) || f < 0 || f > 65535 {
			return fmt.Errorf("field %q: want a port number 0..65535, got %s", name, v)
		}
		*dst = int(f)
		return nil
	}
	checks := []error{
		str("transport", &ci.Transport, false, "tcp"),
		str("ip", &ci.IP, true, ""),
		port("shell_port", &ci.ShellPort),
		port("control_port", &ci.ControlPort),
		port("stdin_port", &ci.StdinPort),
		port("iopub_port", &ci.IOPubPort),
		port("hb_port", &ci.HBPort),
		str("key", &ci.Key, false, ""),
		str("signature_scheme", &ci.SignatureScheme, false, "hmac-sha256"),
		str("kernel_name", &ci.KernelName, false, ""),
	}
	if err := joinOneLine(checks); err != nil {
		return ci, err
	}
	return ci, ci.Validate()
}

// Validate checks the values (not the presence) of the fields.
func (ci ConnectionInfo) Validate() error {
	switch ci.Transport {
	case "tcp", "ipc":
	default:
		return fmt.Errorf("field \"transport\": %q is not supported (want \"tcp\" or \"ipc\")", ci.Transport)
	}
	if strings.TrimSpace(ci.IP) == "" {
		return errors.New("field \"ip\" is empty")
	}
	if _, err := newSigner(ci.SignatureScheme, []byte(ci.Key)); err != nil {
		return fmt.Errorf("field \"signature_scheme\": %w", err)
	}
	ports := map[string]int{"shell_port": ci.ShellPort, "control_port": ci.ControlPort,
		"stdin_port": ci.StdinPort, "iopub_port": ci.IOPubPort, "hb_port": ci.HBPort}
	seen := map[int]string{}
	for _, name := range []string{"shell_port", "control_port", "stdin_port", "iopub_port", "hb_port"} {
		p := ports[name]
		if p < 0 || p > 65535 {
			return fmt.Errorf("field %q: %d is not a port number", name, p)
		}
		if p != 0 {
			if other, dup := seen[p]; dup {
				return fmt.Errorf("fields %q and %q both use port %d", other, name, p)
			}
			seen[p] = name
		}
	}
	return nil
}

// joinOneLine joins field errors with "; " so a bad connection file is
// reported on one line (errors.Join would use newlines).
func joinOneLine(errs []error) error {
	var msgs []string
	var first error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if first == nil {
			first = e
		}
		msgs = append(msgs, e.Error())
	}
	if first == nil {
		return nil
	}
	if len(msgs) == 1 {
		return first
	}
	return fmt.Errorf("%w; %s", first, strings.Join(msgs[1:], "; "))
}
