package accelerate

import (
	"encoding/binary"
	"fmt"
	"math"
)

// metricsLayout is the padded split GatherForMetrics undoes: the data set
// length of the last padded SplitIndices (PrepareData, Split..., with pad)
// and how far the gathers have gone into each process's share.
type metricsLayout struct {
	n      int // data set length; 0: no padded split recorded
	procs  int
	cursor int // position in every process's share of the next values
}

func (a *Accelerator) recordPaddedSplit(n int) {
	a.train.mu.Lock()
	defer a.train.mu.Unlock()
	a.train.layout = metricsLayout{n: n, procs: a.NumProcesses()}
}

// GatherForMetrics is Accelerate's gather_for_metrics: it gathers values
// from every process, in process order, and drops the duplicates that a
// padded split added so that every process had the same number of items
// (Accelerate's even_batches): the result holds one value per item of the
// data set.
//
// The padding undone is that of the last padded split of this Accelerator
// (SplitIndices, PrepareData or Split... with pad = true). Each call takes
// the next values of this process's share in order (a batch, or the whole
// share at once); several slices may be passed for the same items
// (predictions and labels, as Accelerate gathers a tuple), and each comes
// back gathered. Every process must pass slices of the same length. After
// the last item of the share the next call starts the share again (the next
// evaluation pass). Without a padded split the values are simply gathered.
func (a *Accelerator) GatherForMetrics(values ...[]float64) ([][]float64, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("accelerate: GatherForMetrics: no values")
	}
	m := len(values[0])
	for i, v := range values {
		if len(v) != m {
			return nil, fmt.Errorf("accelerate: GatherForMetrics: slice %d has %d values, slice 0 has %d: pass values of the same items", i, len(v), m)
		}
	}
	// One all-gather for all the slices: each process sends its slices back
	// to back.
	payload := make([]byte, 0, 8*m*len(values))
	for _, v := range values {
		for _, x := range v {
			payload = binary.LittleEndian.AppendUint64(payload, math.Float64bits(x))
		}
	}
	parts, err := a.GatherBytes(payload)
	if err != nil {
		return nil, fmt.Errorf("accelerate: GatherForMetrics: %w", err)
	}
	for r, p := range parts {
		if len(p) != len(payload) {
			return nil, fmt.Errorf("accelerate: GatherForMetrics: process %d passed %d values, process %d passed %d: every process must pass the same number",
				r, len(p)/8/len(values), a.ProcessIndex(), m)
		}
	}
	a.train.mu.Lock()
	lay := a.train.layout
	keep := make([]int, len(parts)) // values kept from each process
	if lay.n > 0 && lay.procs == len(parts) {
		share := (lay.n + lay.procs - 1) / lay.procs
		if lay.cursor+m > share {
			a.train.mu.Unlock()
			return nil, fmt.Errorf("accelerate: GatherForMetrics: %d values at position %d run past this process's share of %d items (the padded split of %d items): gather each item once per pass",
				m, lay.cursor, share, lay.n)
		}
		for r := range parts {
			start, end := splitRange(lay.n, lay.procs, r)
			keep[r] = max(0, min(m, end-start-lay.cursor))
		}
		a.train.layout.cursor = (lay.cursor + m) % share
	} else {
		for r := range keep {
			keep[r] = m
		}
	}
	a.train.mu.Unlock()

	out := make([][]float64, len(values))
	for s := range values {
		for r, p := range parts {
			for i := 0; i < keep[r]; i++ {
				out[s] = append(out[s], math.Float64frombits(binary.LittleEndian.Uint64(p[8*(s*m+i):])))
			}
		}
		if out[s] == nil {
			out[s] = []float64{}
		}
	}
	return out, nil
}
