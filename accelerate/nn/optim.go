package nn

import (
	"math"

	"github.com/goaccel/goaccel/accelerate/ddp"
)

// Optimizer updates a model's parameters from its gradients.
type Optimizer interface {
	// Step applies one update (torch's optimizer.step()).
	Step()
	// ZeroGrad sets the model's gradients to zero (optimizer.zero_grad()).
	ZeroGrad()
}

var (
	_ Optimizer = (*SGD)(nil)
	_ Optimizer = (*Adam)(nil)
)

func zero(m ddp.Model) {
	for _, g := range m.Gradients() {
		clear(g)
	}
}

// SGD is torch.optim.SGD with momentum (dampening 0, no Nesterov) and
// weight decay: buf = μ·buf + (g + λ·p); p -= lr·buf.
type SGD struct {
	LR, Momentum, WeightDecay float64

	model ddp.Model
	buf   [][]float64
}

// NewSGD returns SGD over model's parameters (a *ddp.DDP's module or the
// model itself: the buffers are the same). It panics on a nil model.
func NewSGD(model ddp.Model, lr, momentum float64) *SGD {
	if model == nil {
		panic(errNoModel)
	}
	return &SGD{LR: lr, Momentum: momentum, model: model}
}

// Step implements Optimizer.
func (o *SGD) Step() {
	ps, gs := o.model.Parameters(), o.model.Gradients()
	if o.Momentum != 0 && o.buf == nil {
		o.buf = make([][]float64, len(ps))
		for i, p := range ps {
			o.buf[i] = make([]float64, len(p))
		}
	}
	for i, p := range ps {
		g := gs[i]
		for j := range p {
			d := g[j] + o.WeightDecay*p[j]
			if o.Momentum != 0 {
				o.buf[i][j] = o.Momentum*o.buf[i][j] + d
				d = o.buf[i][j]
			}
			p[j] -= o.LR * d
		}
	}
}

// ZeroGrad implements Optimizer.
func (o *SGD) ZeroGrad() { zero(o.model) }

// Adam is torch.optim.Adam (bias-corrected moments, L2 weight decay added to
// the gradient): defaults β1 0.9, β2 0.999, ε 1e-8.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	model ddp.Model
	m, v  [][]float64
	t     int
}

// NewAdam returns Adam over model's parameters with learning rate lr and
// torch's defaults for the rest. It panics on a nil model.
func NewAdam(model ddp.Model, lr float64) *Adam {
	if model == nil {
		panic(errNoModel)
	}
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, model: model}
}

// Steps is the number of Step calls so far.
func (o *Adam) Steps() int { return o.t }

// Step implements Optimizer.
func (o *Adam) Step() {
	ps, gs := o.model.Parameters(), o.model.Gradients()
	if o.m == nil {
		o.m = make([][]float64, len(ps))
		o.v = make([][]float64, len(ps))
		for i, p := range ps {
			o.m[i] = make([]float64, len(p))
			o.v[i] = make([]float64, len(p))
		}
	}
	o.t++
	c1 := 1 - math.Pow(o.Beta1, float64(o.t))
	c2 := 1 - math.Pow(o.Beta2, float64(o.t))
	for i, p := range ps {
		g, m, v := gs[i], o.m[i], o.v[i]
		for j := range p {
			d := g[j] + o.WeightDecay*p[j]
			m[j] = o.Beta1*m[j] + (1-o.Beta1)*d
			v[j] = o.Beta2*v[j] + (1-o.Beta2)*d*d
			p[j] -= o.LR * (m[j] / c1) / (math.Sqrt(v[j]/c2) + o.Eps)
		}
	}
}

// ZeroGrad implements Optimizer.
func (o *Adam) ZeroGrad() { zero(o.model) }
