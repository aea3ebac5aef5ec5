package amp

import (
	"fmt"
	"math"
	"strings"
)

// Precision is a mixed_precision setting.
type Precision string

// Mixed-precision modes (Accelerate's PrecisionType).
const (
	No   Precision = "no"
	FP8  Precision = "fp8"
	FP16 Precision = "fp16"
	BF16 Precision = "bf16"
)

// ParsePrecision parses a mixed_precision value (any case; "" means "no").
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return No, nil
	case No, FP8, FP16, BF16:
		return p, nil
	}
	return "", fmt.Errorf("unknown mixed_precision mode %q: choose between ['no', 'fp8', 'fp16', 'bf16']", s)
}

// Float32ToFloat16 converts f to IEEE 754 binary16 bits, rounding to nearest,
// ties to even. Values beyond the half range become ±Inf, tiny values become
// subnormals or ±0, NaN stays a (quiet) NaN.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): value = full × 2^(e-14) units of 2^-24.
		if exp == 0 {
			return sign // float32 subnormals are far below half's range
		}
		full := mant | 0x800000
		shift := uint(14 - e)
		if shift > 24 {
			return sign
		}
		hm := full >> shift
		rem := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && hm&1 == 1) {
			hm++
		}
		return sign | uint16(hm)
	}
	v := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++ // a carry into the exponent is the correct result, up to 0x7c00 = Inf
	}
	return sign | uint16(v)
}

// Float16ToFloat32 converts IEEE 754 binary16 bits to float32 (exact).
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			return -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}

// Float32ToBFloat16 converts f to bfloat16 bits (the top 16 bits of a
// float32), rounding to nearest, ties to even; NaN stays a quiet NaN.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 converts bfloat16 bits to float32 (exact).
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundFP16 rounds f to the nearest float16 value.
func RoundFP16(f float32) float32 { return Float16ToFloat32(Float32ToFloat16(f)) }

// RoundBF16 rounds f to the nearest bfloat16 value.
func RoundBF16(f float32) float32 { return BFloat16ToFloat32(Float32ToBFloat16(f)) }

// RoundFP16Slice rounds every element of buf to float16 precision in place.
func RoundFP16Slice(buf []float32) {
	for i, v := range buf {
		buf[i] = RoundFP16(v)
	}
}

// RoundBF16Slice rounds every element of buf to bfloat16 precision in place.
func RoundBF16Slice(buf []float32) {
	for i, v := range buf {
		buf[i] = RoundBF16(v)
	}
}

// RoundFP16Slice64 rounds every element of buf to float16 precision in place
// (through float32: a value within half a float32 ulp of a float16 tie may
// round differently than a direct conversion would).
func RoundFP16Slice64(buf []float64) {
	for i, v := range buf {
		buf[i] = float64(RoundFP16(float32(v)))
	}
}

// RoundBF16Slice64 rounds every element of buf to bfloat16 precision in place
// (through float32, see RoundFP16Slice64).
func RoundBF16Slice64(buf []float64) {
	for i, v := range buf {
		buf[i] = float64(RoundBF16(float32(v)))
	}
}

// Simulate rounds buf in place to the precision p computes in: fp16 and bf16
// round, "no" and "fp8" (goaccel has no FP8 engine) leave buf unchanged.
func Simulate(p Precision, buf []float32) {
	switch p {
	case FP16:
		RoundFP16Slice(buf)
	case BF16:
		RoundBF16Slice(buf)
	}
}

// Simulate64 is Simulate for float64 buffers.
func Simulate64(p Precision, buf []float64) {
	switch p {
	case FP16:
		RoundFP16Slice64(buf)
	case BF16:
		RoundBF16Slice64(buf)
	}
}
