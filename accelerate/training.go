package accelerate

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/goaccel/goaccel/accelerate/ddp"
)

// trainState is what the training-loop helpers keep per Accelerator:
// Accelerate's GradientState (step, sync_gradients), the prepared objects
// SaveState saves, and the checkpoint naming.
type trainState struct {
	mu            sync.Mutex
	accSteps      int  // gradient_accumulation_steps
	step          int  // Accumulate calls (Accelerate's accelerator.step)
	syncGradients bool // Accelerate's sync_gradients

	models     []trackedModel
	optimizers []any
	custom     []any

	autoNaming bool
	totalLimit int
	iteration  int // Accelerate's save_iteration

	layout metricsLayout
}

func newTrainState(c *config) trainState {
	n := c.gradAccSteps
	if n == 0 {
		n = 1
	}
	return trainState{accSteps: n, syncGradients: true, autoNaming: c.autoCheckpoint, totalLimit: c.totalLimit, iteration: c.iteration}
}

// GradientAccumulationSteps is the n of WithGradientAccumulationSteps (1 by
// default).
func (a *Accelerator) GradientAccumulationSteps() int {
	a.train.mu.Lock()
	defer a.train.mu.Unlock()
	return a.train.accSteps
}

// Step is the number of Accumulate calls so far (Accelerate's
// accelerator.step), restored by LoadState: with one accumulation step it
// counts optimizer steps, so a resumed loop can start at acc.Step().
func (a *Accelerator) Step() int {
	a.train.mu.Lock()
	defer a.train.mu.Unlock()
	return a.train.step
}

// SyncGradientsNow is Accelerate's sync_gradients: true when the last
// Accumulate call was a synchronising step (every n-th, and always outside
// Accumulate), false while gradients are being accumulated locally. Step
// the optimizer, clip and zero the gradients only when it is true. (The
// method SyncGradients, which takes a model, averages gradients.)
func (a *Accelerator) SyncGradientsNow() bool {
	a.train.mu.Lock()
	defer a.train.mu.Unlock()
	return a.train.syncGradients
}

// BackwardScale is the factor Accelerate's accelerator.backward applies to
// the loss, 1/GradientAccumulationSteps: goaccel's models take the gradient
// of the loss, so multiply that gradient by it before back-propagating (n
// accumulated micro-batches then add up to the mean over the large batch).
func (a *Accelerator) BackwardScale() float64 {
	return 1 / float64(a.GradientAccumulationSteps())
}

func asDDP(op string, model any) (*ddp.DDP, error) {
	d, ok := model.(*ddp.DDP)
	if !ok || d == nil {
		return nil, fmt.Errorf("accelerate: %s: %T is not a prepared model (pass what Prepare or PrepareModel returned)", op, model)
	}
	return d, nil
}

// Accumulate is Accelerate's accumulate context manager: it counts a step
// and runs fn (forward and backward of one micro-batch). On every n-th call
// (n = GradientAccumulationSteps) the gradients are averaged across
// processes after fn, unless fn already called SyncGradients; on the other
// calls fn runs inside the model's NoSync, so gradients accumulate locally
// without communication. SyncGradientsNow tells which kind of step it was:
//
//	err := acc.Accumulate(model, func() error {
//	    logits := m.Forward(xb)
//	    _, g := nn.CrossEntropy(logits, yb)
//	    g.Scale(acc.BackwardScale(), g)
//	    m.Backward(g)
//	    return nil
//	})
//	if acc.SyncGradientsNow() {
//	    acc.ClipGradNorm(model, 1, 2)
//	    opt.Step()
//	    opt.ZeroGrad()
//	}
//
// Every process must call it the same number of times. fn's error is
// returned as is.
func (a *Accelerator) Accumulate(model any, fn func() error) error {
	d, err := asDDP("Accumulate", model)
	if err != nil {
		return err
	}
	if fn == nil {
		return errors.New("accelerate: Accumulate: nil function")
	}
	if !a.train.nextMicroStep() {
		return d.NoSync(fn)
	}
	before := d.Stats().Syncs
	if err := fn(); err != nil {
		return err
	}
	if d.Stats().Syncs != before {
		return nil
	}
	if err := d.SyncGradients(); err != nil {
		return fmt.Errorf("accelerate: Accumulate: %w", err)
	}
	return nil
}

// nextMicroStep counts a micro-step of Accumulate and reports whether it
// synchronises the gradients (every accSteps-th).
func (t *trainState) nextMicroStep() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.step++
	t.syncGradients = t.step%t.accSteps == 0
	return t.syncGradients
}

// AccumulateSharded is Accumulate for a model whose gradients a sharded
// optimizer reduces (FSDP): it counts the micro-step as Accumulate does
// and runs fn; on a synchronising step it then runs reduce (which
// reduce-scatters the gradients) where Accumulate would all-reduce them.
func (a *Accelerator) AccumulateSharded(fn, reduce func() error) error {
	if fn == nil || reduce == nil {
		return errors.New("accelerate: AccumulateSharded: nil function")
	}
	sync := a.train.nextMicroStep()
	if err := fn(); err != nil || !sync {
		return err
	}
	return reduce()
}

// gradients returns a model's gradient buffers (a *ddp.DDP's module, a
// ddp.Model or a ddp.Model32).
func gradients(op string, model any) (g64 [][]float64, g32 [][]float32, err error) {
	if d, ok := model.(*ddp.DDP); ok && d != nil {
		model = d.Module()
	}
	switch m := model.(type) {
	case ddp.Model:
		return m.Gradients(), nil, nil
	case ddp.Model32:
		return nil, m.Gradients32(), nil
	}
	return nil, nil, fmt.Errorf("accelerate: %s: %T is not a model: it needs Gradients() [][]float64 or Gradients32() [][]float32", op, model)
}

// ClipGradNorm is Accelerate's clip_grad_norm_ (torch's
// clip_grad_norm_): it computes the normType-norm of all the model's
// gradients together (the norm of the per-tensor norms; normType
// math.Inf(1) for the largest magnitude), scales every gradient by
// min(1, maxNorm/(total+1e-6)) in place, and returns the total norm before
// clipping. Call it on the synchronised gradients (when SyncGradientsNow is
// true). With fp16 and an enabled loss scaler, the gradients are unscaled
// first unless they already were since the last step, as Accelerate does.
// A non-finite total is returned as torch returns it (and then scales the
// gradients to NaN, as torch does with error_if_nonfinite=False).
func (a *Accelerator) ClipGradNorm(model any, maxNorm, normType float64) (float64, error) {
	if math.IsNaN(normType) || normType <= 0 {
		return 0, fmt.Errorf("accelerate: ClipGradNorm: norm type %v is not supported: use a positive p or math.Inf(1)", normType)
	}
	if math.IsNaN(maxNorm) || maxNorm < 0 {
		return 0, fmt.Errorf("accelerate: ClipGradNorm: max norm %v must be a non-negative number", maxNorm)
	}
	g64, g32, err := gradients("ClipGradNorm", model)
	if err != nil {
		return 0, err
	}
	if s := a.scaler; s != nil && s.IsEnabled() && !s.Unscaled() {
		if g64 != nil {
			s.Unscale(g64)
		} else {
			s.Unscale32(g32)
		}
	}
	var norms []float64
	for _, g := range g64 {
		norms = append(norms, vectorNorm(g, normType))
	}
	for _, g := range g32 {
		norms = append(norms, vectorNorm(g, normType))
	}
	if len(norms) == 0 {
		return 0, nil
	}
	total := vectorNorm(norms, normType)
	coef := math.Min(maxNorm/(total+1e-6), 1)
	if math.IsNaN(total) {
		coef = math.NaN() // torch.clamp keeps NaN
	}
	for _, g := range g64 {
		for i := range g {
			g[i] *= coef
		}
	}
	c32 := float32(coef)
	for _, g := range g32 {
		for i := range g {
			g[i] *= c32
		}
	}
	return total, nil
}

// vectorNorm is torch.linalg.vector_norm for ord p > 0 or +Inf, computed in
// float64.
func vectorNorm[T float32 | float64](v []T, p float64) float64 {
	switch {
	case math.IsInf(p, 1):
		m := 0.0
		for _, x := range v {
			ax := math.Abs(float64(x))
			if ax > m || math.IsNaN(ax) {
				m = ax
				if math.IsNaN(ax) {
					return ax
				}
			}
		}
		return m
	case p == 2:
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	case p == 1:
		s := 0.0
		for _, x := range v {
			s += math.Abs(float64(x))
		}
		return s
	}
	s := 0.0
	for _, x := range v {
		s += math.Pow(math.Abs(float64(x)), p)
	}
	return math.Pow(s, 1/p)
}

// ClipGradValue is Accelerate's clip_grad_value_ (torch's
// clip_grad_value_): every gradient is clamped to [-clipValue, clipValue]
// in place. NaN gradients stay NaN, as with torch.clamp.
func (a *Accelerator) ClipGradValue(model any, clipValue float64) error {
	if math.IsNaN(clipValue) || clipValue < 0 {
		return fmt.Errorf("accelerate: ClipGradValue: clip value %v must be a non-negative number", clipValue)
	}
	g64, g32, err := gradients("ClipGradValue", model)
	if err != nil {
		return err
	}
	for _, g := range g64 {
		for i, x := range g {
			if x > clipValue {
				g[i] = clipValue
			} else if x < -clipValue {
				g[i] = -clipValue
			}
		}
	}
	c := float32(clipValue)
	for _, g := range g32 {
		for i, x := range g {
			if x > c {
				g[i] = c
			} else if x < -c {
				g[i] = -c
			}
		}
	}
	return nil
}
