package pg

import (
	"fmt"
	"strings"
	"unsafe"
)

// ReduceOp is the combining operation of AllReduce and Reduce.
type ReduceOp uint8

// Reduction operations. Mean is the sum divided by the number of ranks.
const (
	Sum ReduceOp = iota + 1
	Mean
	Max
	Min
)

func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("ReduceOp(%d)", uint8(op))
}

func (op ReduceOp) valid() bool { return op >= Sum && op <= Min }

// ParseReduceOp parses "sum", "mean", "max" or "min" (any case).
func ParseReduceOp(s string) (ReduceOp, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "sum":
		return Sum, nil
	case "mean", "avg", "average":
		return Mean, nil
	case "max":
		return Max, nil
	case "min":
		return Min, nil
	}
	return 0, fmt.Errorf("pg: unknown reduce op %q: choose between [sum mean max min]", s)
}

type float interface{ ~float32 | ~float64 }

// wireElem is an element type that travels as its raw bytes: the floats,
// and 16-bit float formats carried as their bit patterns.
type wireElem interface{ float | ~uint16 }

// asBytes views s's memory as bytes (no copy).
func asBytes[T wireElem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

func elemSize[T wireElem]() int {
	var x T
	return int(unsafe.Sizeof(x))
}

func dtypeOf[T float]() byte {
	if elemSize[T]() == 4 {
		return dtFloat32
	}
	return dtFloat64
}

// reduceInto folds src into dst element-wise (Mean folds as Sum).
func reduceInto[T float](dst, src []T, op ReduceOp) {
	src = src[:len(dst)]
	switch op {
	case Sum, Mean:
		i := 0
		for ; i+8 <= len(dst); i += 8 {
			d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
			d[0] += s[0]
			d[1] += s[1]
			d[2] += s[2]
			d[3] += s[3]
			d[4] += s[4]
			d[5] += s[5]
			d[6] += s[6]
			d[7] += s[7]
		}
		for ; i < len(dst); i++ {
			dst[i] += src[i]
		}
	case Max:
		for i, v := range src {
			if v > dst[i] {
				dst[i] = v
			}
		}
	case Min:
		for i, v := range src {
			if v < dst[i] {
				dst[i] = v
			}
		}
	}
}

func scale[T float](dst []T, n int) {
	f := T(n)
	for i := range dst {
		dst[i] /= f
	}
}
