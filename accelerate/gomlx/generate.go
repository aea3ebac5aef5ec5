package gomlx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/goaccel/goaccel/interrupt"
)

// SampleOptions configure Generate: how the next token is drawn from the
// model's logits.
type SampleOptions struct {
	// Temperature divides the logits before the softmax: below 1 sharper,
	// above 1 flatter; 0 takes the most likely token every time.
	Temperature float64
	// TopK keeps the K most likely tokens (0: all of them).
	TopK int
	// Seed seeds the draws: the same seed, model and prompt give the same
	// text.
	Seed uint64
}

// Generate extends prompt by n tokens drawn one at a time from a causal
// language model, as nanoGPT's sample.py does: the model sees the last
// block tokens (the context it was trained with), the logits of the last
// position are divided by the temperature, all but the TopK largest are
// dropped, and the next token is drawn from their softmax.
//
// The model must take token ids of shape [1, block] (int32) and return
// logits [1, block, vocabulary]. Shorter contexts are padded at the end
// with token 0 so that one graph serves every length: a causal model's
// logits at a position do not depend on later positions. Generate runs
// the model in inference mode (dropout off), on this process only; if the
// model is not built yet (a checkpoint loaded with LoadState before any
// step), the first call builds it, which with several processes every
// process must make.
func (t *Trainer) Generate(prompt []int32, n, block int, opts SampleOptions) ([]int32, error) {
	switch {
	case len(prompt) == 0:
		return nil, errors.New("gomlx: Generate: an empty prompt (give at least one token)")
	case block <= 0:
		return nil, fmt.Errorf("gomlx: Generate: context length %d", block)
	case n < 0:
		return nil, fmt.Errorf("gomlx: Generate: %d tokens", n)
	case opts.Temperature < 0 || math.IsNaN(opts.Temperature) || math.IsInf(opts.Temperature, 0):
		return nil, fmt.Errorf("gomlx: Generate: temperature %v: want a finite number ≥ 0", opts.Temperature)
	case opts.TopK < 0:
		return nil, fmt.Errorf("gomlx: Generate: top-k %d", opts.TopK)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	out := append([]int32(nil), prompt...)
	window := make([]int32, block)
	for range n {
		interrupt.Point() // an interrupted cell stops between two tokens
		ctxTokens := out[max(0, len(out)-block):]
		clear(window)
		copy(window, ctxTokens)
		res, err := t.Predict(tensors.FromFlatDataAndDimensions(append([]int32(nil), window...), 1, block))
		if err != nil {
			return out, fmt.Errorf("gomlx: Generate: %s", strings.TrimPrefix(err.Error(), "gomlx: Predict: "))
		}
		if len(res) == 0 {
			return out, errors.New("gomlx: Generate: the model returned no output")
		}
		logits := res[0]
		dims := logits.Shape().Dimensions
		if len(dims) != 3 || dims[0] != 1 || dims[1] != block {
			return out, fmt.Errorf("gomlx: Generate: the model returned %s for input [1, %d]: want logits [1, %d, vocabulary]",
				logits.Shape(), block, block)
		}
		if logits.DType() != dtypes.Float32 {
			return out, fmt.Errorf("gomlx: Generate: the model's logits are %s, want float32", logits.DType())
		}
		vocab := dims[2]
		row := make([]float32, vocab)
		pos := len(ctxTokens) - 1
		if err := tensors.ConstFlatData(logits, func(flat []float32) { copy(row, flat[pos*vocab:(pos+1)*vocab]) }); err != nil {
			return out, fmt.Errorf("gomlx: Generate: %w", err)
		}
		_ = logits.FinalizeAll()
		next, err := Sample(row, opts.Temperature, opts.TopK, rng)
		if err != nil {
			return out, fmt.Errorf("gomlx: Generate: after %d tokens: %w", len(out)-len(prompt), err)
		}
		out = append(out, next)
	}
	return out, nil
}

// Sample draws a token from one position's logits: divided by
// temperature (0: the most likely token), only the topK largest kept (0:
// all), softmax, one draw from rng. Logits that are NaN, or all -Inf, are
// an error (a diverged model), never a silent token.
func Sample(logits []float32, temperature float64, topK int, rng *rand.Rand) (int32, error) {
	if len(logits) == 0 {
		return 0, errors.New("no logits")
	}
	best := -1
	for i, l := range logits {
		if math.IsNaN(float64(l)) {
			return 0, fmt.Errorf("logit %d is NaN: the model diverged", i)
		}
		if best < 0 || l > logits[best] {
			best = i
		}
	}
	if math.IsInf(float64(logits[best]), -1) {
		return 0, errors.New("every logit is -Inf")
	}
	if temperature == 0 {
		return int32(best), nil
	}
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	if topK > 0 && topK < len(logits) {
		sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
		order = order[:topK]
	}
	probs := make([]float64, len(order))
	top := float64(logits[best]) / temperature
	var sum float64
	for j, i := range order {
		probs[j] = math.Exp(float64(logits[i])/temperature - top)
		sum += probs[j]
	}
	u := rng.Float64() * sum
	for j, p := range probs {
		if u < p {
			return int32(order[j]), nil
		}
		u -= p
	}
	return int32(order[len(order)-1]), nil
}
