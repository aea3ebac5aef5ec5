package tensorboard

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC-32C table (hardware-accelerated where the CPU has it).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC32C is TFRecord's masked CRC-32C of data:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
func MaskedCRC32C(data []byte) uint32 {
	return maskCRC(crc32.Checksum(data, castagnoli))
}

func maskCRC(crc uint32) uint32 {
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8
}

// recordHeaderLen is the framing before the payload: uint64 length and the
// masked CRC of those 8 bytes.
const recordHeaderLen = 12

// AppendRecord appends data framed as one TFRecord: uint64 little-endian
// length, masked CRC-32C of the length bytes, data, masked CRC-32C of data.
func AppendRecord(dst, data []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderLen)...)
	dst = append(dst, data...)
	return finishRecord(dst, start)
}

// beginRecord reserves the header of a record whose payload the caller
// appends next; finishRecord fills the header and appends the trailer.
func beginRecord(dst []byte) ([]byte, int) {
	start := len(dst)
	return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), start
}

func finishRecord(dst []byte, start int) []byte {
	payload := dst[start+recordHeaderLen:]
	binary.LittleEndian.PutUint64(dst[start:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+8:], MaskedCRC32C(dst[start:start+8]))
	return binary.LittleEndian.AppendUint32(dst, MaskedCRC32C(payload))
}
