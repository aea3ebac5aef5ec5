package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/ddp"
)

// Activation is the non-linearity between the layers of an MLP.
type Activation string

// Activations.
const (
	Tanh Activation = "tanh"
	ReLU Activation = "relu"
)

var (
	_ ddp.Model  = (*MLP)(nil)
	_ ddp.Shaped = (*MLP)(nil)
)

// MLP is a stack of fully connected layers (torch.nn.Linear) with an
// activation between them and none after the last: Forward returns logits.
// Layer l has a weight of shape out×in (torch's layout, y = x·Wᵀ + b) and a
// bias of length out. It implements ddp.Model (Parameters and Gradients
// return the live buffers W0, b0, W1, b1, ...) and ddp.Shaped.
//
// An MLP is not safe for concurrent use: Forward keeps the activations that
// the next Backward needs.
type MLP struct {
	sizes     []int
	act       Activation
	params    [][]float64
	grads     [][]float64
	precision amp.Precision

	// Saved by Forward for Backward: the input of each layer (after the
	// previous activation, rounded when autocasting) and the weights used.
	inputs  []*mat.Dense
	weights []*mat.Dense
}

// NewMLP builds an MLP with layer widths sizes (input width first, number of
// outputs last; at least two entries) and activation act between the layers.
// The parameters are initialised as torch.nn.Linear does (uniform in
// ±1/√fan_in), from a generator seeded with seed: the same seed gives the
// same model on every process.
func NewMLP(sizes []int, act Activation, seed uint64) (*MLP, error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("nn: NewMLP: need at least an input and an output width, got %v", sizes)
	}
	for _, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("nn: NewMLP: widths must be positive, got %v", sizes)
		}
	}
	switch act {
	case Tanh, ReLU:
	default:
		return nil, fmt.Errorf("nn: NewMLP: unknown activation %q (use %q or %q)", act, Tanh, ReLU)
	}
	m := &MLP{sizes: append([]int(nil), sizes...), act: act, precision: amp.No}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for l := 0; l+1 < len(sizes); l++ {
		in, out := sizes[l], sizes[l+1]
		bound := 1 / math.Sqrt(float64(in))
		w := make([]float64, out*in)
		b := make([]float64, out)
		for i := range w {
			w[i] = (2*rng.Float64() - 1) * bound
		}
		for i := range b {
			b[i] = (2*rng.Float64() - 1) * bound
		}
		m.params = append(m.params, w, b)
		m.grads = append(m.grads, make([]float64, len(w)), make([]float64, len(b)))
	}
	return m, nil
}

// Sizes returns the layer widths.
func (m *MLP) Sizes() []int { return append([]int(nil), m.sizes...) }

// Layers is the number of linear layers.
func (m *MLP) Layers() int { return len(m.sizes) - 1 }

// Parameters returns the live parameter buffers: W0, b0, W1, b1, ...
// (weights row-major out×in).
func (m *MLP) Parameters() [][]float64 { return m.params }

// Gradients returns the live gradient buffers, parallel to Parameters.
func (m *MLP) Gradients() [][]float64 { return m.grads }

// Shapes returns each parameter's shape: [out in] for weights, [out] for
// biases (ddp.Shaped, used by the PowerSGD comm hook).
func (m *MLP) Shapes() [][]int {
	var s [][]int
	for l := 0; l+1 < len(m.sizes); l++ {
		s = append(s, []int{m.sizes[l+1], m.sizes[l]}, []int{m.sizes[l+1]})
	}
	return s
}

// ParameterNames names the parameters as torch names those of an
// nn.Sequential of Linear layers and activations: "0.weight", "0.bias",
// "2.weight", "2.bias", ... (the activations take the odd indices), so a
// state dict saved by Accelerator.SaveModel loads into
// torch.nn.Sequential(nn.Linear(...), nn.Tanh(), nn.Linear(...)).
func (m *MLP) ParameterNames() []string {
	var s []string
	for l := 0; l+1 < len(m.sizes); l++ {
		s = append(s, fmt.Sprintf("%d.weight", 2*l), fmt.Sprintf("%d.bias", 2*l))
	}
	return s
}

// NumParameters is the number of scalar parameters.
func (m *MLP) NumParameters() int {
	n := 0
	for _, p := range m.params {
		n += len(p)
	}
	return n
}

// ZeroGrad sets every gradient to zero (torch's model.zero_grad()).
func (m *MLP) ZeroGrad() {
	for _, g := range m.grads {
		clear(g)
	}
}

// SetPrecision selects the simulated autocast precision of the linear layers:
// "bf16" or "fp16" round their inputs, weights and outputs to that format;
// "no", "" and "fp8" (goaccel has no FP8 engine) compute in float64. Pass
// Accelerator.MixedPrecision() when Accelerator.AutocastEnabled().
func (m *MLP) SetPrecision(p string) error {
	pr, err := amp.ParsePrecision(p)
	if err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	m.precision = pr
	return nil
}

// Precision is the autocast precision set with SetPrecision ("no" by default).
func (m *MLP) Precision() string { return string(m.precision) }

func (m *MLP) round(d *mat.Dense) {
	if m.precision == amp.BF16 || m.precision == amp.FP16 {
		amp.Simulate64(m.precision, d.RawMatrix().Data)
	}
}

// weight returns layer l's weight as an out×in matrix over the live buffer,
// or a rounded copy when autocasting.
func (m *MLP) weight(l int) *mat.Dense {
	in, out := m.sizes[l], m.sizes[l+1]
	buf := m.params[2*l]
	if m.precision == amp.BF16 || m.precision == amp.FP16 {
		buf = append([]float64(nil), buf...)
		amp.Simulate64(m.precision, buf)
	}
	return mat.NewDense(out, in, buf)
}

// Forward computes the logits for the rows of x (n × Sizes()[0]) and keeps
// what Backward needs. It panics when x has the wrong number of columns.
func (m *MLP) Forward(x mat.Matrix) *mat.Dense {
	n, c := x.Dims()
	if c != m.sizes[0] {
		panic(fmt.Sprintf("nn: MLP.Forward: input has %d columns, the model expects %d", c, m.sizes[0]))
	}
	L := m.Layers()
	m.inputs = make([]*mat.Dense, L)
	m.weights = make([]*mat.Dense, L)
	h := mat.DenseCopyOf(x)
	for l := 0; l < L; l++ {
		m.round(h)
		m.inputs[l] = h
		w := m.weight(l)
		m.weights[l] = w
		out := mat.NewDense(n, m.sizes[l+1], nil)
		out.Mul(h, w.T())
		b := m.params[2*l+1]
		for i := 0; i < n; i++ {
			floats.Add(out.RawRowView(i), b)
		}
		m.round(out)
		if l+1 < L {
			data := out.RawMatrix().Data
			switch m.act {
			case Tanh:
				for i, v := range data {
					data[i] = math.Tanh(v)
				}
			case ReLU:
				for i, v := range data {
					if v < 0 {
						data[i] = 0
					}
				}
			}
		}
		h = out
	}
	return h
}

// Backward back-propagates grad, the gradient of the loss with respect to
// the logits of the last Forward (n × outputs), and adds the parameter
// gradients to Gradients() (they accumulate, as torch's do: call ZeroGrad
// before each step). It returns the gradient with respect to the input.
// It panics without a preceding Forward or when grad has the wrong shape.
func (m *MLP) Backward(grad mat.Matrix) *mat.Dense {
	if m.inputs == nil {
		panic("nn: MLP.Backward: call Forward first")
	}
	n, _ := m.inputs[0].Dims()
	if r, c := grad.Dims(); r != n || c != m.sizes[len(m.sizes)-1] {
		panic(fmt.Sprintf("nn: MLP.Backward: gradient is %d×%d, the last Forward produced %d×%d", r, c, n, m.sizes[len(m.sizes)-1]))
	}
	dy := mat.DenseCopyOf(grad)
	var gw mat.Dense
	for l := m.Layers() - 1; l >= 0; l-- {
		x := m.inputs[l]
		gw.Reset()
		gw.Mul(dy.T(), x) // out × in
		floats.Add(m.grads[2*l], gw.RawMatrix().Data)
		gb := m.grads[2*l+1]
		for i := 0; i < n; i++ {
			floats.Add(gb, dy.RawRowView(i))
		}
		dx := mat.NewDense(n, m.sizes[l], nil)
		dx.Mul(dy, m.weights[l])
		if l > 0 {
			// x is the previous layer's activation output.
			xd, dd := x.RawMatrix().Data, dx.RawMatrix().Data
			switch m.act {
			case Tanh:
				for i, a := range xd {
					dd[i] *= 1 - a*a
				}
			case ReLU:
				for i, a := range xd {
					if a <= 0 {
						dd[i] = 0
					}
				}
			}
		}
		dy = dx
	}
	return dy
}

// Predict returns the arg-max class of each row of x.
func (m *MLP) Predict(x mat.Matrix) []int { return Argmax(m.Forward(x)) }

// StateDict returns a copy of the parameters (torch's state_dict), in the
// order of Parameters.
func (m *MLP) StateDict() [][]float64 {
	out := make([][]float64, len(m.params))
	for i, p := range m.params {
		out[i] = append([]float64(nil), p...)
	}
	return out
}

// LoadStateDict copies parameters saved by StateDict (for example returned
// by a launched training function) into the model.
func (m *MLP) LoadStateDict(state [][]float64) error {
	if len(state) != len(m.params) {
		return fmt.Errorf("nn: LoadStateDict: %d tensors for a model with %d", len(state), len(m.params))
	}
	for i, p := range m.params {
		if len(state[i]) != len(p) {
			return fmt.Errorf("nn: LoadStateDict: tensor %d has %d elements, the model's %d", i, len(state[i]), len(p))
		}
	}
	for i, p := range m.params {
		copy(p, state[i])
	}
	return nil
}

// CrossEntropy is the mean softmax cross-entropy of logits (n × classes)
// against labels (n class indices), torch's F.cross_entropy with reduction
// "mean", and its gradient with respect to the logits, (softmax − onehot)/n.
func CrossEntropy(logits mat.Matrix, labels []int) (loss float64, grad *mat.Dense) {
	n, k := logits.Dims()
	if len(labels) != n {
		panic(fmt.Sprintf("nn: CrossEntropy: %d labels for %d rows", len(labels), n))
	}
	if n == 0 {
		panic("nn: CrossEntropy: empty batch")
	}
	grad = mat.DenseCopyOf(logits)
	inv := 1 / float64(n)
	for i := 0; i < n; i++ {
		row := grad.RawRowView(i)
		y := labels[i]
		if y < 0 || y >= k {
			panic(fmt.Sprintf("nn: CrossEntropy: label %d of row %d is outside [0, %d)", y, i, k))
		}
		mx := floats.Max(row)
		s := 0.0
		for j, v := range row {
			e := math.Exp(v - mx)
			row[j] = e
			s += e
		}
		loss += math.Log(s) - (logits.At(i, y) - mx)
		for j := range row {
			row[j] /= s
		}
		row[y]--
		floats.Scale(inv, row)
	}
	return loss * inv, grad
}

// Argmax returns the index of the largest entry of each row.
func Argmax(m mat.Matrix) []int {
	r, c := m.Dims()
	out := make([]int, r)
	for i := 0; i < r; i++ {
		best := 0
		for j := 1; j < c; j++ {
			if m.At(i, j) > m.At(i, best) {
				best = j
			}
		}
		out[i] = best
	}
	return out
}

// Accuracy is the fraction of rows of logits whose arg-max is the label.
func Accuracy(logits mat.Matrix, labels []int) float64 {
	pred := Argmax(logits)
	if len(pred) != len(labels) {
		panic(fmt.Sprintf("nn: Accuracy: %d labels for %d rows", len(labels), len(pred)))
	}
	if len(pred) == 0 {
		return 0
	}
	ok := 0
	for i, p := range pred {
		if p == labels[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(pred))
}

// Batch gathers rows idx of x and the matching labels of y (a mini-batch).
func Batch(x mat.Matrix, y []int, idx []int) (*mat.Dense, []int) {
	r, c := x.Dims()
	if len(y) != r {
		panic(fmt.Sprintf("nn: Batch: %d labels for %d rows", len(y), r))
	}
	if len(idx) == 0 {
		panic("nn: Batch: no indices")
	}
	xb := mat.NewDense(len(idx), c, nil)
	yb := make([]int, len(idx))
	for i, j := range idx {
		if j < 0 || j >= r {
			panic(fmt.Sprintf("nn: Batch: index %d outside [0, %d)", j, r))
		}
		mat.Row(xb.RawRowView(i), j, x)
		yb[i] = y[j]
	}
	return xb, yb
}

// errNoModel is returned by the optimizers' constructors for a nil model.
var errNoModel = errors.New("nn: optimizer needs a model (a ddp.Model such as *nn.MLP)")
