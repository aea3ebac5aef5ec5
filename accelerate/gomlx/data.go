package gomlx

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/train"
)

// processes is what the data helpers need of an Accelerator.
type processes interface {
	NumProcesses() int
	ProcessIndex() int
	GatherBytes(data []byte) ([][]byte, error)
}

// ShardDataset gives this process its part of every batch ds yields:
// process i of N gets examples [i·B/N, (i+1)·B/N) of a global batch of B
// (axis 0 of every input and label), as Accelerate's prepared DataLoader
// with split_batches does. Every process must iterate a dataset that
// yields the same global batches (the same data, shuffled with the same
// seed). A batch that N does not divide is an error naming its size. In
// one process ds is returned as it is.
//
// That the processes draw the same global batches is checked, since
// nothing else would notice: the first batch after the start and after
// every Reset, and every batch in ACCELERATE_DEBUG_MODE, each process
// compares a checksum of the whole batch with process 0's (a small
// all-gather). GoMLX v0.26.0's InMemoryDataset.Shuffle, for one, ignores
// WithRand and draws from math/rand's global source: seed that with
// accelerate.SetSeed on every process first.
func ShardDataset(acc processes, ds train.Dataset) train.Dataset {
	if acc.NumProcesses() <= 1 {
		return ds
	}
	return &shardedDataset{acc: acc, ds: ds, n: acc.NumProcesses(), rank: acc.ProcessIndex(), check: true, every: debugMode()}
}

type shardedDataset struct {
	acc     processes
	ds      train.Dataset
	n, rank int
	check   bool // compare the next batch with process 0's
	every   bool // compare every batch
	batches int  // batches since the last Reset
}

func (s *shardedDataset) Name() string { return s.ds.Name() }
func (s *shardedDataset) Reset() {
	s.ds.Reset()
	s.check, s.batches = true, 0
}

// IsOwnershipTransferred implements train.DatasetCustomOwnership: the
// slices are new tensors, the caller's to free.
func (s *shardedDataset) IsOwnershipTransferred() bool { return true }

// Yield implements train.Dataset.
func (s *shardedDataset) Yield() (spec any, inputs, labels []*tensors.Tensor, err error) {
	spec, inputs, labels, err = s.ds.Yield()
	if err != nil {
		return spec, nil, nil, err // io.EOF as it is: train.Loop compares it with ==
	}
	s.batches++
	if s.check || s.every {
		s.check = false
		if err := s.sameBatch(inputs, labels); err != nil {
			return nil, nil, nil, err
		}
	}
	owned := true
	if o, ok := s.ds.(train.DatasetCustomOwnership); ok {
		owned = o.IsOwnershipTransferred()
	}
	cut := func(ts []*tensors.Tensor, what string) ([]*tensors.Tensor, error) {
		out := make([]*tensors.Tensor, len(ts))
		for i, t := range ts {
			part, err := sliceBatch(t, s.n, s.rank)
			if err != nil {
				return nil, fmt.Errorf("gomlx: dataset %q: %s %d: %w", s.ds.Name(), what, i, err)
			}
			out[i] = part
			if owned {
				_ = t.FinalizeAll()
			}
		}
		return out, nil
	}
	if inputs, err = cut(inputs, "input"); err != nil {
		return nil, nil, nil, err
	}
	if labels, err = cut(labels, "label"); err != nil {
		return nil, nil, nil, err
	}
	return spec, inputs, labels, nil
}

// sameBatch compares a checksum of this process's global batch with
// process 0's (a collective).
func (s *shardedDataset) sameBatch(inputs, labels []*tensors.Tensor) error {
	h := fnv.New64a()
	for _, t := range append(append([]*tensors.Tensor{}, inputs...), labels...) {
		fmt.Fprint(h, t.Shape().String())
		if err := t.ConstBytes(func(b []byte) { h.Write(b) }); err != nil {
			return fmt.Errorf("gomlx: dataset %q: %w", s.ds.Name(), err)
		}
	}
	all, err := s.acc.GatherBytes(h.Sum(nil))
	if err != nil {
		return fmt.Errorf("gomlx: dataset %q: comparing the batches of the processes: %w", s.ds.Name(), err)
	}
	var differ []string
	for r := 1; r < len(all); r++ {
		if !bytes.Equal(all[r], all[0]) {
			differ = append(differ, strconv.Itoa(r))
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("gomlx: dataset %q: batch %d since the start (or the last Reset) differs between process 0 and process %s: "+
			"every process must draw the same global batches, which ShardDataset splits; shuffle with the same seed on every process "+
			"(GoMLX's InMemoryDataset.Shuffle draws from math/rand's global source, whatever WithRand says: call accelerate.SetSeed(seed, false) first)",
			s.ds.Name(), s.batches, strings.Join(differ, ", "))
	}
	return nil
}

// sliceBatch returns part rank of n of t along axis 0.
func sliceBatch(t *tensors.Tensor, n, rank int) (*tensors.Tensor, error) {
	dims := t.Shape().Dimensions
	if len(dims) == 0 {
		return nil, errors.New("a scalar has no batch axis to split between processes")
	}
	b := dims[0]
	if b%n != 0 {
		return nil, fmt.Errorf("a batch of %d examples cannot be split evenly between %d processes: make the global batch size a multiple of %d (and drop a last, shorter batch)", b, n, n)
	}
	per := b / n
	partDims := append([]int{per}, dims[1:]...)
	part := tensors.FromShape(shapes.Make(t.DType(), partDims...))
	row := int(t.Shape().Memory()) / b
	var err error
	cerr := t.ConstBytes(func(src []byte) {
		err = part.MutableBytes(func(dst []byte) { copy(dst, src[rank*per*row:(rank+1)*per*row]) })
	})
	if cerr != nil {
		return nil, cerr
	}
	return part, err
}

// SkipFirstBatches returns ds after its first n batches (Accelerate's
// skip_first_batches), for a resumed run: n is the number of batches the
// run consumed before its checkpoint (Accelerator.Step() counts them). At
// the end of ds it resets ds and goes on skipping, as an epoch loop would.
func SkipFirstBatches(ds train.Dataset, n int) train.Dataset {
	if n <= 0 {
		return ds
	}
	return &skippingDataset{ds: ds, skip: n}
}

type skippingDataset struct {
	ds   train.Dataset
	skip int
}

func (s *skippingDataset) Name() string { return s.ds.Name() }
func (s *skippingDataset) Reset()       { s.ds.Reset() }

// Yield implements train.Dataset.
func (s *skippingDataset) Yield() (spec any, inputs, labels []*tensors.Tensor, err error) {
	owned := true
	if o, ok := s.ds.(train.DatasetCustomOwnership); ok {
		owned = o.IsOwnershipTransferred()
	}
	for empty := 0; s.skip > 0; {
		_, in, lb, err := s.ds.Yield()
		if err == io.EOF {
			if empty++; empty > 1 {
				return nil, nil, nil, fmt.Errorf("gomlx: dataset %q yields no batch to skip", s.ds.Name())
			}
			s.ds.Reset()
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		empty = 0
		s.skip--
		if owned {
			for _, t := range append(in, lb...) {
				_ = t.FinalizeAll()
			}
		}
	}
	return s.ds.Yield()
}

// IsOwnershipTransferred implements train.DatasetCustomOwnership as the
// wrapped dataset does.
func (s *skippingDataset) IsOwnershipTransferred() bool {
	if o, ok := s.ds.(train.DatasetCustomOwnership); ok {
		return o.IsOwnershipTransferred()
	}
	return true
}
