package wandb

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The transaction log framing shared by every W&B ".wandb" file: a 7-byte
// file header followed by LevelDB-log style chunks packed into 32 KiB blocks.
const (
	fileIdent      = ":W&B"
	fileMagic      = 0xBEE1
	fileVersion    = 0
	fileHeaderLen  = 7
	blockLen       = 32 * 1024
	chunkHeaderLen = 7

	chunkFull   = 1
	chunkFirst  = 2
	chunkMiddle = 3
	chunkLast   = 4
)

// logWriter frames records into the W&B transaction-log format. The file
// header occupies the start of the first block, so that block holds 7 bytes
// fewer of chunks than the others.
type logWriter struct {
	w   io.Writer
	off int64 // bytes written so far, header included
}

func newLogWriter(w io.Writer) *logWriter { return &logWriter{w: w} }

// writeHeader writes the ":W&B" ident, the little-endian magic and the version.
func (l *logWriter) writeHeader() error {
	var h [fileHeaderLen]byte
	copy(h[:4], fileIdent)
	binary.LittleEndian.PutUint16(h[4:6], fileMagic)
	h[6] = fileVersion
	if _, err := l.w.Write(h[:]); err != nil {
		return fmt.Errorf("wandb: writing the transaction log header: %w", err)
	}
	l.off += fileHeaderLen
	return nil
}

// writeRecord splits payload into FULL or FIRST/MIDDLE.../LAST chunks so that
// no chunk crosses a block boundary; a block tail too short for a chunk
// header is zero-filled.
func (l *logWriter) writeRecord(payload []byte) error {
	first := true
	for {
		left := blockLen - int(l.off%blockLen)
		if left < chunkHeaderLen {
			if _, err := l.w.Write(make([]byte, left)); err != nil {
				return fmt.Errorf("wandb: padding a transaction log block: %w", err)
			}
			l.off += int64(left)
			left = blockLen
		}
		n := min(len(payload), left-chunkHeaderLen)
		last := n == len(payload)
		var typ byte
		switch {
		case first && last:
			typ = chunkFull
		case first:
			typ = chunkFirst
		case last:
			typ = chunkLast
		default:
			typ = chunkMiddle
		}
		if err := l.writeChunk(typ, payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		first = false
		if last {
			return nil
		}
	}
}

func (l *logWriter) writeChunk(typ byte, data []byte) error {
	crc := crc32.Update(crc32.ChecksumIEEE([]byte{typ}), crc32.IEEETable, data)
	var h [chunkHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:4], crc)
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(data)))
	h[6] = typ
	if _, err := l.w.Write(h[:]); err != nil {
		return fmt.Errorf("wandb: writing a chunk header: %w", err)
	}
	if _, err := l.w.Write(data); err != nil {
		return fmt.Errorf("wandb: writing a chunk: %w", err)
	}
	l.off += int64(chunkHeaderLen + len(data))
	return nil
}

// readLog parses a whole transaction log (header, chunks, CRCs) and returns
// the record payloads. It exists for tests and for tools that want to check a
// file without Python; wandb's own reader is what the tests trust.
func readLog(b []byte) ([][]byte, error) {
	if len(b) < fileHeaderLen || string(b[:4]) != fileIdent ||
		binary.LittleEndian.Uint16(b[4:6]) != fileMagic || b[6] != fileVersion {
		return nil, fmt.Errorf("wandb: not a W&B transaction log (bad header)")
	}
	var recs [][]byte
	var cur []byte
	inRecord := false
	off := fileHeaderLen
	for off < len(b) {
		left := blockLen - off%blockLen
		if left < chunkHeaderLen {
			off += left
			continue
		}
		if off+chunkHeaderLen > len(b) {
			return recs, fmt.Errorf("wandb: truncated chunk header at offset %d", off)
		}
		crc := binary.LittleEndian.Uint32(b[off : off+4])
		n := int(binary.LittleEndian.Uint16(b[off+4 : off+6]))
		typ := b[off+6]
		if off+chunkHeaderLen+n > len(b) {
			return recs, fmt.Errorf("wandb: truncated chunk at offset %d", off)
		}
		data := b[off+chunkHeaderLen : off+chunkHeaderLen+n]
		if got := crc32.Update(crc32.ChecksumIEEE([]byte{typ}), crc32.IEEETable, data); got != crc {
			return recs, fmt.Errorf("wandb: chunk CRC mismatch at offset %d", off)
		}
		off += chunkHeaderLen + n
		switch typ {
		case chunkFull:
			if inRecord {
				return recs, fmt.Errorf("wandb: FULL chunk inside a record at offset %d", off)
			}
			recs = append(recs, append([]byte(nil), data...))
		case chunkFirst:
			if inRecord {
				return recs, fmt.Errorf("wandb: FIRST chunk inside a record at offset %d", off)
			}
			cur, inRecord = append([]byte(nil), data...), true
		case chunkMiddle, chunkLast:
			if !inRecord {
				return recs, fmt.Errorf("wandb: chunk type %d outside a record at offset %d", typ, off)
			}
			cur = append(cur, data...)
			if typ == chunkLast {
				recs, cur, inRecord = append(recs, cur), nil, false
			}
		default:
			return recs, fmt.Errorf("wandb: unknown chunk type %d at offset %d", typ, off)
		}
	}
	if inRecord {
		return recs, fmt.Errorf("wandb: log ends inside a record")
	}
	return recs, nil
}
