package accelerate

import (
	"encoding/json"
	"errors"
	"math"
	mrand "math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/nn"
)

// trainer is a one-process training set-up over a real MLP and Adam.
type trainer struct {
	acc   *Accelerator
	model *nn.MLP
	opt   *nn.Adam
	d     *ddp.DDP
	x     *mat.Dense
	y     []int
}

func newTrainer(t *testing.T, dir string, widths []int, seed uint64, opts ...Option) *trainer {
	t.Helper()
	ResetState()
	opts = append([]Option{withEnv(envMap(nil)), WithProjectConfiguration(ProjectConfiguration{ProjectDir: dir, AutomaticCheckpointNaming: true, TotalLimit: 2})}, opts...)
	acc, err := NewAccelerator(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.NewMLP(widths, nn.Tanh, seed)
	if err != nil {
		t.Fatal(err)
	}
	opt := nn.NewAdam(m, 0.05)
	out, err := acc.Prepare(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(8, 2, []float64{0, 1, 1, 0, 0.5, 0.5, -1, 0.2, 0.3, -0.7, 0.9, 0.9, -0.4, -0.4, 0.1, 0.8})
	return &trainer{acc: acc, model: m, opt: opt, d: out[0].(*ddp.DDP), x: x, y: []int{0, 1, 0, 1, 1, 0, 0, 1}}
}

func (tr *trainer) steps(t *testing.T, k int) {
	t.Helper()
	for i := 0; i < k; i++ {
		idx := RNG().Perm(8)[:4] // batches from goaccel's generator
		xb, yb := nn.Batch(tr.x, tr.y, idx)
		err := tr.acc.Accumulate(tr.d, func() error {
			_, g := nn.CrossEntropy(tr.model.Forward(xb), yb)
			tr.model.Backward(g)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		tr.opt.Step()
		tr.opt.ZeroGrad()
	}
}

func sameBits(t *testing.T, what string, a, b [][]float64) {
	t.Helper()
	for i := range a {
		for j := range a[i] {
			if math.Float64bits(a[i][j]) != math.Float64bits(b[i][j]) {
				t.Fatalf("%s: tensor %d[%d]: %v vs %v", what, i, j, a[i][j], b[i][j])
			}
		}
	}
}

type counter struct{ Epoch, Seen int }

func TestSaveStateLoadStateResumesExactly(t *testing.T) {
	defer ResetState()
	dir := t.TempDir()
	SetSeed(3, false)
	tr := newTrainer(t, dir, []int{2, 8, 2}, 1)
	prog := &counter{}
	if err := tr.acc.RegisterForCheckpointing(prog); err != nil {
		t.Fatal(err)
	}
	tr.steps(t, 3)
	prog.Epoch, prog.Seen = 1, 12
	if err := tr.acc.SaveState(""); err != nil {
		t.Fatal(err)
	}
	tr.steps(t, 3)
	want := tr.model.StateDict()
	wantDraw := RNG().Uint64()

	// A new process state, another initialisation and another seed: the
	// checkpoint restores parameters, Adam's moments and step, the RNG, the
	// step counter and the registered object.
	SetSeed(99, false)
	tr2 := newTrainer(t, dir, []int{2, 8, 2}, 7)
	prog2 := &counter{}
	tr2.acc.RegisterForCheckpointing(prog2)
	if got := tr2.acc.LatestCheckpoint(); filepath.Base(got) != "checkpoint_0" {
		t.Fatalf("LatestCheckpoint = %q", got)
	}
	if err := tr2.acc.LoadState(""); err != nil {
		t.Fatal(err)
	}
	if tr2.acc.Step() != 3 || tr2.opt.Steps() != 3 || *prog2 != (counter{1, 12}) {
		t.Fatalf("after LoadState: step %d, Adam step %d, registered %+v", tr2.acc.Step(), tr2.opt.Steps(), *prog2)
	}
	tr2.steps(t, 3)
	sameBits(t, "resumed vs uninterrupted", want, tr2.model.StateDict())
	if RNG().Uint64() != wantDraw {
		t.Error("the generator did not continue where the checkpoint left it")
	}

	// The next automatic save is checkpoint_1; TotalLimit 2 keeps the two
	// newest.
	for i := 0; i < 3; i++ {
		if err := tr2.acc.SaveState(""); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "checkpoints"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "checkpoint_2 checkpoint_3" {
		t.Errorf("checkpoints: %v", names)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "checkpoints", "checkpoint_3"))
	names = names[:0]
	for _, e := range files {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "custom_checkpoint_0.bin goaccel_checkpoint.json model.safetensors optimizer.bin random_states_0.json" {
		t.Errorf("checkpoint files: %s", got)
	}
	// Without automatic naming a directory is required, and a name given
	// with it is refused.
	if err := tr2.acc.SaveState("x"); err == nil || !strings.Contains(err.Error(), `with automatic checkpoint naming the directory is`) {
		t.Errorf("SaveState(x): %v", err)
	}
	// Saving over an explicit directory replaces it whole.
	explicit := filepath.Join(t.TempDir(), "ckpt")
	for i := 0; i < 2; i++ {
		ResetState()
		a, _ := NewAccelerator(withEnv(envMap(nil)))
		a.Prepare(tr2.model, tr2.opt)
		if err := a.SaveState(explicit); err != nil {
			t.Fatal(err)
		}
		if err := a.SaveState(""); err == nil || !strings.Contains(err.Error(), "no directory given and automatic checkpoint naming is off") {
			t.Errorf("SaveState(\"\"): %v", err)
		}
	}
}

func TestLoadStateRefusesAnotherSetup(t *testing.T) {
	defer ResetState()
	dir := t.TempDir()
	tr := newTrainer(t, dir, []int{2, 8, 2}, 1)
	if err := tr.acc.LoadState(""); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("no checkpoint yet: %v", err)
	}
	tr.steps(t, 2)
	if err := tr.acc.SaveState(""); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "checkpoints", "checkpoint_0")

	check := func(name string, tr *trainer, want string) {
		t.Helper()
		before := tr.model.StateDict()
		err := tr.acc.LoadState(ck)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
		sameBits(t, name+": parameters changed by a failed LoadState", before, tr.model.StateDict())
	}
	check("other width", newTrainer(t, dir, []int{2, 4, 2}, 1), `parameter "0.weight" has shape (8, 2) in the file, (4, 2) in the model`)
	check("other depth", newTrainer(t, dir, []int{2, 8, 8, 2}, 1), `parameter "2.weight" has shape (2, 8) in the file, (8, 8) in the model`)

	// Another optimizer.
	ResetState()
	a, _ := NewAccelerator(withEnv(envMap(nil)))
	m, _ := nn.NewMLP([]int{2, 8, 2}, nn.Tanh, 1)
	a.Prepare(m, nn.NewSGD(m, 0.1, 0.9))
	if err := a.LoadState(ck); err == nil || !strings.Contains(err.Error(), "optimizer 0 is a *nn.Adam in the checkpoint, a *nn.SGD in this run") {
		t.Errorf("other optimizer: %v", err)
	}
	// A registered object the checkpoint lacks.
	tr3 := newTrainer(t, dir, []int{2, 8, 2}, 1)
	tr3.acc.RegisterForCheckpointing(&counter{})
	check("registered", tr3, "the checkpoint holds 0 registered objects, 1 are registered")

	// Another world size resumes (the state is whole in a checkpoint).
	man := filepath.Join(ck, "goaccel_checkpoint.json")
	b, _ := os.ReadFile(man)
	var mm map[string]any
	json.Unmarshal(b, &mm)
	mm["world_size"] = 2
	nb, _ := json.Marshal(mm)
	os.WriteFile(man, nb, 0o644)
	if other := newTrainer(t, dir, []int{2, 8, 2}, 1); other.acc.LoadState(ck) != nil || other.acc.Step() == 0 {
		t.Errorf("a checkpoint of 2 processes in 1: %v, step %d", other.acc.LoadState(ck), other.acc.Step())
	}
	os.WriteFile(man, b, 0o644)

	// A corrupt file, an incomplete checkpoint.
	mf := filepath.Join(ck, "optimizer.bin")
	ob, _ := os.ReadFile(mf)
	ob[len(ob)-1] ^= 1
	os.WriteFile(mf, ob, 0o644)
	check("corrupt", newTrainer(t, dir, []int{2, 8, 2}, 1), "optimizer.bin is corrupt")
	os.Remove(man)
	check("incomplete", newTrainer(t, dir, []int{2, 8, 2}, 1), "is not a complete checkpoint: it has no goaccel_checkpoint.json")
	if err := newTrainer(t, dir, []int{2, 8, 2}, 1).acc.LoadState(""); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("a checkpoint without manifest is not the newest: %v", err)
	}

	if err := tr.acc.RegisterForCheckpointing(counter{}, nil); err == nil || !strings.Contains(err.Error(), "object 0 (accelerate.counter): not a non-nil pointer; object 1 (<nil>)") {
		t.Errorf("RegisterForCheckpointing: %v", err)
	}
}

func TestSaveModelLoadModel(t *testing.T) {
	defer ResetState()
	tr := newTrainer(t, t.TempDir(), []int{2, 8, 2}, 1)
	tr.steps(t, 1)
	dir := t.TempDir()
	if err := tr.acc.SaveModel(tr.d, dir, 100); err != nil { // 100 bytes: every tensor its own shard
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model-00004-of-00004.safetensors")); err != nil {
		t.Errorf("expected 4 shards: %v", err)
	}
	other, _ := nn.NewMLP([]int{2, 8, 2}, nn.Tanh, 9)
	if err := LoadModel(other, dir); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "LoadModel", tr.model.StateDict(), other.StateDict())
	wrong, _ := nn.NewMLP([]int{2, 8, 3}, nn.Tanh, 9)
	if err := LoadModel(wrong, dir); err == nil || !strings.Contains(err.Error(), `parameter "2.weight" has shape (2, 8) in the file, (3, 8) in the model`) {
		t.Errorf("other shape: %v", err)
	}
	deeper, _ := nn.NewMLP([]int{2, 8, 8, 2}, nn.Tanh, 9)
	if err := LoadModel(deeper, dir); err == nil || !strings.Contains(err.Error(), `has shape`) {
		t.Errorf("other depth: %v", err)
	}
	if err := LoadModel(42, dir); err == nil || !strings.Contains(err.Error(), "int is not a model") {
		t.Errorf("not a model: %v", err)
	}
}

// n accumulated micro-batches (gradients scaled by BackwardScale, all-reduce
// only on the n-th) give the step of one batch n times larger.
func TestAccumulateMatchesLargeBatch(t *testing.T) {
	defer ResetState()
	const n = 4
	big := newTrainer(t, t.TempDir(), []int{2, 8, 2}, 1)
	_, g := nn.CrossEntropy(big.model.Forward(big.x), big.y)
	big.model.Backward(g)
	big.opt.Step()

	acc := newTrainer(t, t.TempDir(), []int{2, 8, 2}, 1, WithGradientAccumulationSteps(n))
	if acc.acc.GradientAccumulationSteps() != n || acc.acc.BackwardScale() != 1.0/n {
		t.Fatalf("steps %d scale %v", acc.acc.GradientAccumulationSteps(), acc.acc.BackwardScale())
	}
	var syncs []bool
	for i := 0; i < n; i++ {
		xb, yb := nn.Batch(acc.x, acc.y, []int{2 * i, 2*i + 1})
		err := acc.acc.Accumulate(acc.d, func() error {
			_, g := nn.CrossEntropy(acc.model.Forward(xb), yb)
			g.Scale(acc.acc.BackwardScale(), g)
			acc.model.Backward(g)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		syncs = append(syncs, acc.acc.SyncGradientsNow())
		if acc.acc.SyncGradientsNow() {
			acc.opt.Step()
		}
	}
	if st := acc.d.Stats(); st.Syncs != 1 || st.SkippedSyncs != 0 || syncs[n-1] != true || syncs[0] || syncs[1] || syncs[2] {
		t.Errorf("syncs %v, stats %+v", syncs, st)
	}
	a, b := big.model.Parameters(), acc.model.Parameters()
	for i := range a {
		for j := range a[i] {
			if d := math.Abs(a[i][j] - b[i][j]); d > 1e-12*math.Max(1, math.Abs(a[i][j])) {
				t.Fatalf("parameter %d[%d]: %v after accumulation, %v with the large batch", i, j, b[i][j], a[i][j])
			}
		}
	}
	if err := acc.acc.Accumulate(acc.model, func() error { return nil }); err == nil || !strings.Contains(err.Error(), "is not a prepared model") {
		t.Errorf("unprepared model: %v", err)
	}
	if _, err := NewAccelerator(withEnv(envMap(nil)), WithGradientAccumulationSteps(0)); err == nil {
		t.Error("0 accumulation steps accepted")
	}
}

type gradModel struct{ p, g [][]float64 }

func (m *gradModel) Parameters() [][]float64 { return m.p }
func (m *gradModel) Gradients() [][]float64  { return m.g }

func TestClipGradNormAndValue(t *testing.T) {
	defer ResetState()
	ResetState()
	a, _ := NewAccelerator(withEnv(envMap(nil)))
	mk := func() *gradModel {
		return &gradModel{p: [][]float64{{0, 0}, {0}}, g: [][]float64{{3, -4}, {12}}}
	}
	cases := []struct {
		p, max, total float64
	}{
		{2, 6.5, 13}, // per-tensor norms 5 and 12, their 2-norm 13
		{1, 100, 19},
		{math.Inf(1), 6, 12},
		{3, 1, math.Cbrt(math.Pow(math.Cbrt(27+64), 3) + 1728)},
	}
	for _, c := range cases {
		m := mk()
		total, err := a.ClipGradNorm(m, c.max, c.p)
		if err != nil || math.Abs(total-c.total) > 1e-12*c.total {
			t.Errorf("p=%v: total %v, %v; want %v", c.p, total, err, c.total)
		}
		coef := math.Min(c.max/(c.total+1e-6), 1)
		if got := m.g[1][0]; math.Abs(got-12*coef) > 1e-12 {
			t.Errorf("p=%v: clipped gradient %v, want %v", c.p, got, 12*coef)
		}
	}
	m := mk()
	m.g[0][0] = math.NaN()
	if total, _ := a.ClipGradNorm(m, 1, 2); !math.IsNaN(total) || !math.IsNaN(m.g[1][0]) {
		t.Errorf("NaN gradient: total %v, gradients %v (torch returns NaN and scales by NaN)", total, m.g)
	}
	for _, bad := range []struct{ max, p float64 }{{1, 0}, {1, -2}, {1, math.NaN()}, {-1, 2}} {
		if _, err := a.ClipGradNorm(mk(), bad.max, bad.p); err == nil {
			t.Errorf("ClipGradNorm(max %v, p %v) accepted", bad.max, bad.p)
		}
	}
	m = mk()
	if err := a.ClipGradValue(m, 3.5); err != nil || m.g[0][0] != 3 || m.g[0][1] != -3.5 || m.g[1][0] != 3.5 {
		t.Errorf("ClipGradValue: %v, %v", m.g, err)
	}
	if err := a.ClipGradValue(m, -1); err == nil {
		t.Error("negative clip value accepted")
	}
	if _, err := a.ClipGradNorm("x", 1, 2); err == nil || !strings.Contains(err.Error(), "string is not a model") {
		t.Errorf("not a model: %v", err)
	}
}

func TestSetSeed(t *testing.T) {
	SetSeed(5, false)
	x := RNG().Uint64()
	got := mrand.Int63()
	SetSeed(5, false)
	if RNG().Uint64() != x {
		t.Error("RNG not reproducible after SetSeed")
	}
	if want := mrand.New(mrand.NewSource(5)).Int63(); got != want {
		t.Errorf("math/rand's global source was not seeded: %d, want %d (is godebug randseednop=0 in go.mod?)", got, want)
	}
	t.Setenv(EnvRank, "3")
	ResetState()
	SetSeed(5, true)
	a := RNG().Uint64()
	SetSeed(8, false)
	if RNG().Uint64() != a {
		t.Error("device-specific seed is not seed + process index")
	}
}
