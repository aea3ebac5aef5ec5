package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func testFrames(sg signer, ids ...string) [][]byte {
	var idf [][]byte
	for _, id := range ids {
		idf = append(idf, []byte(id))
	}
	h := marshal(header{MsgID: "m1", Session: "s", Username: "u", Date: "2024-01-01T00:00:00Z", MsgType: "execute_request", Version: "5.4"})
	return encode(idf, h, []byte(`{"msg_id":"p0"}`), []byte(`{"k":1}`), []byte(`{"code":"1+1"}`), [][]byte{[]byte("buf")}, sg)
}

func TestCodecRoundTrip(t *testing.T) {
	sg, _ := newSigner("hmac-sha256", []byte("key"))
	frames := testFrames(sg, "id1", "id2")
	m, err := decode(frames, sg)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.identities) != 2 || string(m.identities[0]) != "id1" || string(m.identities[1]) != "id2" {
		t.Errorf("identities %q", m.identities)
	}
	if m.header.MsgType != "execute_request" || m.header.MsgID != "m1" || string(m.parent) != `{"msg_id":"p0"}` ||
		string(m.metadata) != `{"k":1}` || string(m.content) != `{"code":"1+1"}` || len(m.buffers) != 1 {
		t.Errorf("decoded %+v", m)
	}
	// The signature is hex HMAC-SHA256 over header, parent, metadata, content.
	if len(frames[3]) != 64 {
		t.Errorf("signature %q", frames[3])
	}
}

func TestCodecSignatures(t *testing.T) {
	sg, _ := newSigner("hmac-sha256", []byte("key"))
	other, _ := newSigner("hmac-sha256", []byte("other"))
	none, _ := newSigner("hmac-sha256", nil)

	if _, err := decode(testFrames(other), sg); !errors.Is(err, errBadSignature) {
		t.Errorf("wrong key: %v", err)
	}
	missing := testFrames(sg)
	missing[1] = []byte{}
	if _, err := decode(missing, sg); !errors.Is(err, errBadSignature) {
		t.Errorf("missing signature: %v", err)
	}
	tampered := testFrames(sg)
	tampered[5] = []byte(`{"code":"rm -rf /"}`)
	if _, err := decode(tampered, sg); !errors.Is(err, errBadSignature) {
		t.Errorf("tampered content: %v", err)
	}
	// Empty key: no signing, signature ignored.
	f := testFrames(none)
	if len(f[1]) != 0 {
		t.Errorf("empty key produced signature %q", f[1])
	}
	if _, err := decode(testFrames(sg), none); err != nil {
		t.Errorf("empty key must ignore signatures: %v", err)
	}
	// Upper-case hex from some clients is accepted.
	up := testFrames(sg)
	up[1] = bytes.ToUpper(up[1])
	if _, err := decode(up, sg); err != nil {
		t.Errorf("upper-case signature: %v", err)
	}
}

func TestCodecDelimiterAndMalformed(t *testing.T) {
	sg, _ := newSigner("hmac-sha256", []byte("key"))
	// A stray frame before the delimiter (a surfaced PING, an unexpected
	// identity) does not break decoding.
	f := append([][]byte{{0x04, 'P', 'I', 'N', 'G', 0, 0}}, testFrames(sg)...)
	if m, err := decode(f, sg); err != nil || len(m.identities) != 1 {
		t.Errorf("stray frame: %v", err)
	}
	if _, err := decode([][]byte{[]byte("a"), []byte("b")}, sg); !errors.Is(err, errNoDelimiter) {
		t.Errorf("no delimiter: %v", err)
	}
	if _, err := decode([][]byte{delimiter, []byte("sig"), []byte("{}")}, sg); !errors.Is(err, errShortMessage) {
		t.Errorf("short: %v", err)
	}
	// Bad header JSON (correctly signed): no message at all.
	bad := encode(nil, []byte(`{"msg_type":`), []byte("{}"), []byte("{}"), []byte("{}"), nil, sg)
	if m, err := decode(bad, sg); !errors.Is(err, errBadHeader) || m != nil {
		t.Errorf("bad header: %v %v", m, err)
	}
	noType := encode(nil, []byte(`{"msg_id":"x"}`), []byte("{}"), []byte("{}"), []byte("{}"), nil, sg)
	if _, err := decode(noType, sg); !errors.Is(err, errBadHeader) {
		t.Errorf("header without msg_type: %v", err)
	}
	// Good header, bad content: the message comes back with the error so a
	// reply can be sent.
	badContent := encode(nil, marshal(newHeader("complete_request", "s")), []byte("{}"), []byte("{}"), []byte("[1"), nil, sg)
	m, err := decode(badContent, sg)
	if err == nil || m == nil || m.header.MsgType != "complete_request" {
		t.Errorf("bad content: %v %v", m, err)
	}
}

func TestMarshalNeverFails(t *testing.T) {
	b := marshal(map[string]any{"f": func() {}})
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil || v["goaccel_encode_error"] == nil {
		t.Errorf("marshal of a func: %s", b)
	}
	if string(marshal(nil)) != "{}" {
		t.Error("marshal(nil) is not {}")
	}
}

func FuzzDecode(f *testing.F) {
	sg, _ := newSigner("hmac-sha256", []byte("key"))
	join := func(frames [][]byte) []byte {
		b, _ := json.Marshal(frames)
		return b
	}
	f.Add(join(testFrames(sg, "id")), true)
	f.Add(join(testFrames(signer{})), false)
	f.Add([]byte(`["PDxJRFN8TVNHPg==","","e30=","e30=","e30=","e30="]`), false)
	f.Fuzz(func(t *testing.T, data []byte, signed bool) {
		var frames [][]byte
		if json.Unmarshal(data, &frames) != nil {
			// Also try raw bytes split on a separator, so the fuzzer can
			// explore frame contents without JSON.
			frames = bytes.Split(data, []byte{0xff})
		}
		s := signer{}
		if signed {
			s = sg
		}
		m, err := decode(frames, s)
		if err == nil {
			if m == nil || m.header.MsgType == "" {
				t.Fatal("decode succeeded without a message type")
			}
			// What decodes re-encodes and decodes to the same thing.
			re := encode(m.identities, m.rawHeader, m.parent, m.metadata, m.content, m.buffers, s)
			m2, err := decode(re, s)
			if err != nil || m2.header != m.header || !bytes.Equal(m2.content, m.content) {
				t.Fatalf("re-decode: %v", err)
			}
		}
	})
}
