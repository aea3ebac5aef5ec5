// Package zero trains a float64 model (ddp.Model: the models of package nn)
// with its optimizer state and its reduced gradients sharded across the
// processes of a group: ZeRO stage 2, what FSDP's SHARD_GRAD_OP strategy
// does. Each process keeps the whole model (its forward and backward run
// as with DDP) but Adam's two moments only for its share of the
// parameters, a 1/N part of them; a step reduce-scatters the gradients (each
// process receives the mean of its share, where DDP's all-reduce gives
// every process all of them), updates its share, and all-gathers the
// parameters. The traffic is DDP's: a ring all-reduce is a reduce-scatter
// followed by an all-gather.
//
// The parameters are seen as one flat vector, in the order the model lists
// them, cut into N equal shares (the last padded with zeros); process r
// owns share r, as torch's FSDP owns a flat parameter's chunk r.
package zero

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/pg"
)

// Adam is torch.optim.Adam (package nn's Adam, L2 weight decay added to the
// gradient) over a model whose parameters are shared by a group's
// processes, its state sharded.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	g            *pg.Group
	model        ddp.Model
	rank, world  int
	total, share int
	flat         []float64 // world·share: the gradients, then the gathered parameters
	grad         []float64 // share: the mean gradient of this process's share
	own          []float64 // share: this process's share of the parameters
	m, v         []float64 // share: Adam's moments for it
	t            int
}

// NewAdam returns a sharded Adam over model for the processes of g, with
// learning rate lr and torch's defaults for the rest. Every process must
// call it (it broadcasts process 0's parameters, so that every process
// starts from the same model, as DDP does).
func NewAdam(ctx context.Context, g *pg.Group, model ddp.Model, lr float64) (*Adam, error) {
	if g == nil || model == nil {
		return nil, errors.New("zero: NewAdam needs a group and a model")
	}
	total := 0
	for _, p := range model.Parameters() {
		total += len(p)
	}
	world := g.Size()
	share := (total + world - 1) / world
	o := &Adam{
		LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
		g: g, model: model, rank: g.Rank(), world: world, total: total, share: share,
		flat: make([]float64, world*share), grad: make([]float64, share), own: make([]float64, share),
		m: make([]float64, share), v: make([]float64, share),
	}
	for _, p := range model.Parameters() {
		if err := g.BroadcastFloat64(ctx, p, 0); err != nil {
			return nil, fmt.Errorf("zero: broadcasting process 0's parameters: %w", err)
		}
	}
	return o, nil
}

// Steps is the number of Step calls so far.
func (o *Adam) Steps() int { return o.t }

// StateBytes is the memory this process holds for Adam's state: its share
// of the two moments (DDP's Adam holds both for every parameter).
func (o *Adam) StateBytes() int64 { return int64(8 * (len(o.m) + len(o.v))) }

// Share is the range of the flat parameter vector this process owns.
func (o *Adam) Share() (from, to int) {
	from = min(o.rank*o.share, o.total)
	return from, min(from+o.share, o.total)
}

// ZeroGrad sets the model's gradients to zero.
func (o *Adam) ZeroGrad() {
	for _, g := range o.model.Gradients() {
		clear(g)
	}
}

// Step averages the gradients across the processes, each process updating
// its share of the parameters, and gives every process the updated model.
// Every process must call it.
func (o *Adam) Step(ctx context.Context) error {
	ps, gs := o.model.Parameters(), o.model.Gradients()
	k := 0
	for _, g := range gs {
		k += copy(o.flat[k:], g)
	}
	clear(o.flat[k:])
	if err := o.g.ReduceScatterFloat64(ctx, o.grad, o.flat, pg.Mean); err != nil {
		return fmt.Errorf("zero: reduce-scattering the gradients: %w", err)
	}
	from, to := o.Share()
	gather(o.own, ps, from, to)
	clear(o.own[to-from:])
	o.t++
	c1 := 1 - math.Pow(o.Beta1, float64(o.t))
	c2 := 1 - math.Pow(o.Beta2, float64(o.t))
	for j := range to - from {
		p := o.own[j]
		d := o.grad[j] + o.WeightDecay*p
		o.m[j] = o.Beta1*o.m[j] + (1-o.Beta1)*d
		o.v[j] = o.Beta2*o.v[j] + (1-o.Beta2)*d*d
		o.own[j] = p - o.LR*(o.m[j]/c1)/(math.Sqrt(o.v[j]/c2)+o.Eps)
	}
	if err := o.g.AllGatherFloat64(ctx, o.flat, o.own); err != nil {
		return fmt.Errorf("zero: all-gathering the parameters: %w", err)
	}
	k = 0
	for _, p := range ps {
		k += copy(p, o.flat[k:])
	}
	return nil
}

// gather copies the flat range [from, to) of the parameters ps into dst.
func gather(dst []float64, ps [][]float64, from, to int) {
	at := 0
	for _, p := range ps {
		lo, hi := max(from, at), min(to, at+len(p))
		if lo < hi {
			copy(dst[lo-from:], p[lo-at:hi-at])
		}
		at += len(p)
	}
}
