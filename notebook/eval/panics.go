package eval

// The runtime errors the evaluator raises are raised by the failing
// operation itself, so that the panic value is the runtime's (its type, its
// text, its RuntimeError method). The operations are on zero-sized
// elements: nothing is allocated, whatever the length.

//go:noinline
func indexPanic(i int64, n int) struct{} {
	return make([]struct{}, n)[i]
}

//go:noinline
func indexPanicUnsigned(i uint64, n int) struct{} {
	return make([]struct{}, n)[i]
}

type nilTarget struct{ b byte }

//go:noinline
func nilDeref(p *nilTarget) byte { return p.b }

// nilPointer panics as dereferencing a nil pointer does.
func nilPointer() { nilDeref(nil) }

//go:noinline
func nilMapWrite(m map[int]struct{}) { m[0] = struct{}{} }

// nilMap panics as assigning to an entry of a nil map does.
func nilMap() { nilMapWrite(nil) }

//go:noinline
func shiftBy(n int64) int64 { return 1 << n }

// negativeShift panics as shifting by the negative count n does.
func negativeShift(n int64) { shiftBy(n) }

// checkIndex panics as indexing something of length n by i does when i is
// out of range.
func checkIndex(i int64, n int) {
	if i < 0 || i >= int64(n) {
		indexPanic(i, n)
	}
}

func checkIndexUnsigned(i uint64, n int) {
	if i >= uint64(n) {
		indexPanicUnsigned(i, n)
	}
}
