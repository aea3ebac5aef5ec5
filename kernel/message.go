package kernel

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/google/uuid"
)

// protocolVersion is the Jupyter messaging protocol this package speaks.
const protocolVersion = "5.4"

// delimiter separates routing identities from the signed message parts.
var delimiter = []byte("<IDS|MSG>")

// header is a Jupyter message header.
type header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// message is one decoded Jupyter message. rawHeader is kept byte for byte so
// that replies echo the request's header (extra fields included) as their
// parent_header.
type message struct {
	identities [][]byte
	header     header
	rawHeader  json.RawMessage
	parent     json.RawMessage
	metadata   json.RawMessage
	content    json.RawMessage
	buffers    [][]byte
}

// signer computes and checks HMAC signatures; a nil key means no signing.
// Every message in and out is signed, so keyed HMAC states are pooled
// rather than built (key padding, two hash states) per message.
type signer struct {
	key  []byte
	size int        // MAC length in bytes
	macs *sync.Pool // of hash.Hash: HMACs keyed with key
}

func newSigner(scheme string, key []byte) (signer, error) {
	if len(key) == 0 {
		return signer{}, nil
	}
	var h func() hash.Hash
	switch scheme {
	case "hmac-sha256", "":
		h = sha256.New
	case "hmac-sha512":
		h = sha512.New
	case "hmac-sha1":
		h = sha1.New
	default:
		return signer{}, fmt.Errorf("unsupported signature scheme %q (want hmac-sha256)", scheme)
	}
	key = append([]byte(nil), key...)
	return signer{
		key:  key,
		size: h().Size(),
		macs: &sync.Pool{New: func() any { return hmac.New(h, key) }},
	}, nil
}

// mac appends the MAC of parts to dst.
func (s signer) mac(dst []byte, parts ...[]byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	for _, p := range parts {
		m.Write(p)
	}
	dst = m.Sum(dst)
	s.macs.Put(m)
	return dst
}

// sign is the hex signature of parts, nil without a key.
func (s signer) sign(parts ...[]byte) []byte {
	if s.key == nil {
		return nil
	}
	var buf [sha512.Size]byte
	sum := s.mac(buf[:0], parts...)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// verify reports whether sig (hex, either case) is the signature of parts.
func (s signer) verify(sig []byte, parts ...[]byte) bool {
	if len(sig) != hex.EncodedLen(s.size) {
		return false
	}
	var got, want [sha512.Size]byte
	n, err := hex.Decode(got[:], sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got[:n], s.mac(want[:0], parts...))
}

// Decoding errors. errBadSignature messages are dropped without a reply.
var (
	errNoDelimiter  = errors.New("no <IDS|MSG> delimiter")
	errShortMessage = errors.New("fewer than 5 frames after the delimiter")
	errBadSignature = errors.New("bad or missing signature")
	errBadHeader    = errors.New("header is not a valid message header")
)

// decode parses wire frames. When the signature is good and the header
// parses but another part is malformed, it returns the message (with header)
// and an error, so the caller can send an error reply.
func decode(frames [][]byte, sg signer) (*message, error) {
	d := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			d = i
			break
		}
	}
	if d < 0 {
		return nil, errNoDelimiter
	}
	rest := frames[d+1:]
	if len(rest) < 5 {
		return nil, errShortMessage
	}
	if sg.key != nil && !sg.verify(rest[0], rest[1], rest[2], rest[3], rest[4]) {
		return nil, errBadSignature
	}
	m := &message{
		identities: frames[:d],
		rawHeader:  rest[1],
		parent:     rest[2],
		metadata:   rest[3],
		content:    rest[4],
		buffers:    rest[5:],
	}
	// Unmarshal into a struct accepts only an object (or null, which leaves
	// MsgType empty), so the header needs no separate isObject check.
	if err := json.Unmarshal(rest[1], &m.header); err != nil || m.header.MsgType == "" {
		return nil, errBadHeader
	}
	for _, part := range []struct {
		name string
		data []byte
	}{{"parent_header", rest[2]}, {"metadata", rest[3]}, {"content", rest[4]}} {
		if !isObject(part.data) {
			return m, fmt.Errorf("%s is not a JSON object", part.name)
		}
	}
	return m, nil
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// encode builds wire frames: identities, delimiter, signature, header,
// parent header, metadata, content, buffers.
func encode(identities [][]byte, hdr, parent, metadata, content []byte, buffers [][]byte, sg signer) [][]byte {
	frames := make([][]byte, 0, len(identities)+6+len(buffers))
	frames = append(frames, identities...)
	sig := sg.sign(hdr, parent, metadata, content)
	if sig == nil {
		sig = []byte{}
	}
	frames = append(frames, delimiter, sig, hdr, parent, metadata, content)
	return append(frames, buffers...)
}

func newHeader(msgType, session string) header {
	return header{
		MsgID:    uuid.NewString(),
		Session:  session,
		Username: "kernel",
		Date:     time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		MsgType:  msgType,
		Version:  protocolVersion,
	}
}

// marshal is json.Marshal that cannot fail the caller: values that do not
// encode (a func in a cell's metadata) become an error note.
func marshal(v any) []byte {
	if v == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"goaccel_encode_error": err.Error()})
	}
	return b
}
