package kernel

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConnectionFile(t *testing.T) {
	ci, err := ParseConnectionFile(filepath.Join("testdata", "connection.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: 53794, IOPubPort: 53795,
		StdinPort: 53796, ControlPort: 53797, HBPort: 53798, Key: "a0436f6c-1916-498b-8eb9-e81ab9368e84",
		SignatureScheme: "hmac-sha256", KernelName: "goaccel"}
	if ci != want {
		t.Errorf("got %+v\nwant %+v", ci, want)
	}
}

func TestParseConnectionFileErrors(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // substrings of the error
	}{
		{"does_not_exist.json", []string{"does_not_exist.json", "no such file"}},
		{"connection_bad_json.json", []string{"connection_bad_json.json", "not valid JSON", "line 5"}},
		{"connection_missing_port.json", []string{"connection_missing_port.json", `"shell_port" is missing`}},
		{"connection_bad_port.json", []string{"connection_bad_port.json", `"shell_port"`, `"abc"`}},
		{"connection_bad_scheme.json", []string{"signature_scheme", "hmac-md5"}},
		{"connection_bad_transport.json", []string{"transport", "udp"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := ParseConnectionFile(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseConnectionDefaultsAndDuplicates(t *testing.T) {
	ci, err := parseConnection([]byte(`{"ip":"0.0.0.0","shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Transport != "tcp" || ci.SignatureScheme != "hmac-sha256" || ci.Key != "" {
		t.Errorf("defaults: %+v", ci)
	}
	_, err = parseConnection([]byte(`{"ip":"0.0.0.0","shell_port":1,"iopub_port":1,"stdin_port":3,"control_port":4,"hb_port":5}`))
	if err == nil || !strings.Contains(err.Error(), "both use port 1") {
		t.Errorf("duplicate ports: %v", err)
	}
	_, err = parseConnection([]byte(`[1,2]`))
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("array: %v", err)
	}
	_, err = parseConnection([]byte(`{"shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5}`))
	if err == nil || !strings.Contains(err.Error(), `"ip" is missing`) {
		t.Errorf("missing ip: %v", err)
	}
}

func TestNewRejectsBadConnection(t *testing.T) {
	_, err := New(ConnectionInfo{Transport: "tcp"}, &fakeInterp{}, Options{HistoryPath: "-"})
	if err == nil || !strings.Contains(err.Error(), "ip") {
		t.Errorf("New with empty ip: %v", err)
	}
}

func TestIPCTransport(t *testing.T) {
	dir := t.TempDir()
	ci := ConnectionInfo{Transport: "ipc", IP: filepath.Join(dir, "k"), ShellPort: 1, ControlPort: 2,
		StdinPort: 3, IOPubPort: 4, HBPort: 5, SignatureScheme: "hmac-sha256"}
	k, err := New(ci, &fakeInterp{}, Options{HistoryPath: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	matches, _ := filepath.Glob(filepath.Join(dir, "k-*"))
	if len(matches) != 5 {
		t.Errorf("ipc socket files: %v", matches)
	}
}
