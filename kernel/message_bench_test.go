package kernel

import "testing"

// BenchmarkMessageRoundTrip measures what every request and reply costs in
// this package: building and signing a message, then checking and decoding it.
func BenchmarkMessageRoundTrip(b *testing.B) {
	sg, err := newSigner("hmac-sha256", []byte("a-key"))
	if err != nil {
		b.Fatal(err)
	}
	k := &Kernel{sg: sg, session: "s"}
	ids := [][]byte{[]byte("client")}
	content := map[string]any{"status": "ok", "execution_count": 1, "payload": []map[string]any{}, "user_expressions": map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		frames := k.frames(ids, "execute_reply", nil, content, nil)
		if _, err := decode(frames, sg); err != nil {
			b.Fatal(err)
		}
	}
}
