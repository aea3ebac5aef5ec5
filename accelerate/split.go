package accelerate

// SplitBetweenProcesses returns the half-open range [start, end) of n items
// that this process handles: contiguous, in process order, the first
// n % NumProcesses processes taking one extra item (Accelerate's
// split_between_processes). A process with nothing to do gets start == end.
func (a *Accelerator) SplitBetweenProcesses(n int) (start, end int) {
	return splitRange(n, a.NumProcesses(), a.ProcessIndex())
}

func splitRange(n, procs, idx int) (int, int) {
	if n <= 0 {
		return 0, 0
	}
	per, extras := n/procs, n%procs
	start := idx*per + min(idx, extras)
	end := start + per
	if idx < extras {
		end++
	}
	return start, end
}

// SplitIndices returns the indices of the n items this process handles.
// With pad, every process gets the same number of indices
// (ceil(n/NumProcesses)): short ones repeat their last index, and a process
// with no item repeats the last item (n-1), as Accelerate's apply_padding,
// so that a later Gather lines up. Without pad a process may get none.
//
// A padded split is remembered: GatherForMetrics drops the repeated items
// when the results are gathered.
func (a *Accelerator) SplitIndices(n int, pad bool) []int {
	if pad && n > 0 {
		a.recordPaddedSplit(n)
	}
	return splitIndices(n, a.NumProcesses(), a.ProcessIndex(), pad)
}

func splitIndices(n, procs, idx int, pad bool) []int {
	start, end := splitRange(n, procs, idx)
	out := make([]int, 0, end-start+1)
	for i := start; i < end; i++ {
		out = append(out, i)
	}
	if pad && n > 0 {
		want := (n + procs - 1) / procs
		last := n - 1
		if len(out) > 0 {
			last = out[len(out)-1]
		}
		for len(out) < want {
			out = append(out, last)
		}
	}
	return out
}

// Split returns this process's share of items (see SplitIndices for pad).
// Generic: for compiled code; cells use SplitFloat64s, SplitInts,
// SplitStrings, SplitAny or SplitIndices.
func Split[T any](a *Accelerator, items []T, pad bool) []T {
	idx := a.SplitIndices(len(items), pad)
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out
}

// SplitFloat64s is Split for []float64.
func (a *Accelerator) SplitFloat64s(items []float64, pad bool) []float64 {
	return Split(a, items, pad)
}

// SplitInts is Split for []int.
func (a *Accelerator) SplitInts(items []int, pad bool) []int { return Split(a, items, pad) }

// SplitStrings is Split for []string.
func (a *Accelerator) SplitStrings(items []string, pad bool) []string { return Split(a, items, pad) }

// SplitAny is Split for []any.
func (a *Accelerator) SplitAny(items []any, pad bool) []any { return Split(a, items, pad) }
