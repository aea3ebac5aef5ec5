package wandb

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
)

func TestFramingRoundTripAcrossBlocks(t *testing.T) {
	var buf bytes.Buffer
	w := newLogWriter(&buf)
	if err := w.writeHeader(); err != nil {
		t.Fatal(err)
	}
	// Sizes chosen to hit: exact fill of the first block, a tail shorter
	// than a chunk header (zero padding), a zero-length FIRST chunk, and
	// records spanning several blocks.
	sizes := []int{1, blockLen - fileHeaderLen - 2*chunkHeaderLen - 1, 3, 0, blockLen*2 + 5, blockLen - chunkHeaderLen, 100}
	var want [][]byte
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		want = append(want, p)
		if err := w.writeRecord(p); err != nil {
			t.Fatal(err)
		}
	}
	b := buf.Bytes()
	if !bytes.Equal(b[:7], []byte{':', 'W', '&', 'B', 0xE1, 0xBE, 0}) {
		t.Fatalf("header % x", b[:7])
	}
	got, err := readLog(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("record %d: got %d bytes, want %d", i, len(got[i]), len(want[i]))
		}
	}
}

func TestChunkCRCIsIEEEOverTypeAndData(t *testing.T) {
	var buf bytes.Buffer
	w := newLogWriter(&buf)
	_ = w.writeHeader()
	if err := w.writeRecord([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[7:]
	crc := binary.LittleEndian.Uint32(b[0:4])
	if n := binary.LittleEndian.Uint16(b[4:6]); n != 5 || b[6] != chunkFull {
		t.Fatalf("chunk header len=%d type=%d", n, b[6])
	}
	if want := crc32.ChecksumIEEE([]byte("\x01hello")); crc != want {
		t.Fatalf("crc %08x, want %08x", crc, want)
	}
	b[8] ^= 0xff // corrupt the payload
	if _, err := readLog(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("corruption not detected: %v", err)
	}
}
