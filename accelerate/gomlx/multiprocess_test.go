package gomlx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/accelerate/amp"
	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// The multi-process tests start this test binary as worker processes with
// the environment a launcher gives them; a worker trains and writes what
// it saw to a JSON file the test reads.
const (
	envWorker   = "GOACCEL_GOMLX_TEST_WORKER" // the worker's mode
	envOut      = "GOACCEL_GOMLX_TEST_OUT"
	envSteps    = "GOACCEL_GOMLX_TEST_STEPS"
	envSaveAt   = "GOACCEL_GOMLX_TEST_SAVE_AT"
	envCkpt     = "GOACCEL_GOMLX_TEST_CKPT"
	envAdamW    = "GOACCEL_GOMLX_TEST_ADAMW"  // AdamW with decay on matrices and clipping by norm, instead of Adam
	envAccum    = "GOACCEL_GOMLX_TEST_ACCUM"  // gradient accumulation steps
	envNodes    = "GOACCEL_GOMLX_TEST_NODES"  // launch: the processes as this many nodes (1 by default)
	envScale    = "GOACCEL_GOMLX_TEST_SCALE"  // fp16's loss scaler, given to a float32 Trainer with this initial scale
	envInfAt    = "GOACCEL_GOMLX_TEST_INF_AT" // with FSDP: process 1's share of the gradients overflows at this optimizer step
	envPolicy   = "GOACCEL_GOMLX_TEST_POLICY" // FSDP's mixed-precision policy, "param,reduce"
	testSecret  = "gomlx-test-secret"
	globalBatch = 32
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envWorker); mode != "" {
		if err := workerMain(mode); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workerResult is what a worker reports.
type workerResult struct {
	Losses []float64            `json:"losses"` // the global batch's loss at each step (averaged over processes)
	Vars   map[string][]float32 `json:"vars"`   // the masters at the end
	Step   int                  `json:"step"`   // acc.Step() at the start (after a LoadState)
	Err    string               `json:"err,omitempty"`
	// Predicted classes (mode gather): the shares gathered, and every
	// example predicted in one process.
	Gathered []float64 `json:"gathered,omitempty"`
	Direct   []float64 `json:"direct,omitempty"`
	// Mode eval: the mean loss over a held-out set, before the first
	// step and after the last, each process evaluating its shard.
	EvalBefore float64 `json:"eval_before,omitempty"`
	EvalAfter  float64 `json:"eval_after,omitempty"`
	// fp16's loss scaler (envScale): steps skipped, the scale at the end.
	Skipped int `json:"skipped,omitempty"`
	// The dtype the model computed in.
	Compute string `json:"compute,omitempty"`
	// The bytes of weights the process held right after SaveState.
	HeldAfterSave int64   `json:"held_after_save,omitempty"`
	Scale         float64 `json:"scale,omitempty"`
	// What the process holds for training state after the last step, and
	// whether its parameters were shares then (FULL_SHARD).
	State    StateBytes `json:"state"`
	Released bool       `json:"released"`
}

func workerMain(mode string) error {
	accum := 1
	if v := os.Getenv(envAccum); v != "" {
		accum, _ = strconv.Atoi(v)
	}
	accOpts := []accelerate.Option{accelerate.WithLiveChart(false), accelerate.WithGradientAccumulationSteps(accum)}
	if pol, ok := os.LookupEnv(envPolicy); ok { // the plugin's other fields from the environment
		param, reduce, _ := strings.Cut(pol, ",")
		accOpts = append(accOpts, accelerate.WithFSDPPlugin(fsdp.Plugin{MixedPrecisionPolicy: &fsdp.MixedPrecisionPolicy{ParamDType: param, ReduceDType: reduce}}))
	}
	acc, err := accelerate.NewAccelerator(accOpts...)
	if err != nil {
		return err
	}
	defer acc.EndTraining()
	res := workerResult{}
	steps, _ := strconv.Atoi(os.Getenv(envSteps))
	saveAt, _ := strconv.Atoi(os.Getenv(envSaveAt))
	var opts []Option
	if mode == "diverge" {
		opts = append(opts, WithDivergenceCheck(2))
	}
	ctx := toyContext()
	opt := toyOptimizer()
	if os.Getenv(envAdamW) != "" {
		opt = AdamW().LearningRate(0.01).WeightDecay(0.1, DecayMatrices)
		opts = append(opts, WithClipGradNorm(0.5, 2))
	}
	backend := pureGoBackend()
	if os.Getenv("GOACCEL_GOMLX_TEST_XLA") != "" { // by hand: the same tests on XLA's CPU backend
		if backend, err = AcceleratorBackend(acc); err != nil {
			return err
		}
	}
	tr, err := NewTrainer(acc, backend, ctx, toyModel, toyLoss, opt, nil, nil, opts...)
	if err != nil && mode == "refused" {
		res.Err = err.Error()
		b, _ := json.Marshal(res)
		return os.WriteFile(filepath.Join(os.Getenv(envOut), "rank"+strconv.Itoa(acc.ProcessIndex())+".json"), b, 0o644)
	}
	if err != nil {
		return err
	}
	if s := os.Getenv(envScale); s != "" {
		// fp16's scaler on float32 arithmetic, as TestLossScaler does:
		// the pure-Go backend has no float16.
		scale, _ := strconv.ParseFloat(s, 64)
		if tr.scaler, err = amp.NewGradScaler(kwargs.GradScalerKwargs{InitScale: scale}); err != nil {
			return err
		}
	}
	infAt, _ := strconv.Atoi(os.Getenv(envInfAt))
	toy := &toyDataset{d: newToyData(), batch: globalBatch}
	if mode == "unsynced" && acc.ProcessIndex() == 1 {
		toy.pos = globalBatch // this process would draw the next batch
	}
	var ds = ShardDataset(acc, toy)
	evalLoss := func() (float64, error) {
		held := &toyDataset{d: newToyData(), batch: globalBatch, epoch: true, pos: 0}
		m, err := tr.Eval(ShardDataset(acc, held))
		if err != nil {
			return 0, err
		}
		return float64(tensors.ToScalar[float32](m[0])), nil
	}
	if mode == "eval" {
		if res.EvalBefore, err = evalLoss(); err != nil {
			return err
		}
	}
	if mode == "resume" {
		if err := acc.LoadState(os.Getenv(envCkpt)); err != nil {
			return err
		}
		res.Step = acc.Step()
		ds = SkipFirstBatches(ds, acc.Step())
	}
	for step := res.Step; step < steps; step++ {
		_, in, lb, err := ds.Yield()
		if err != nil {
			if mode == "unsynced" {
				res.Err = err.Error()
				break
			}
			return err
		}
		m, err := tr.TrainStep(nil, in, lb)
		if err != nil {
			if mode == "diverge" || mode == "refused" {
				res.Err = err.Error()
				break
			}
			return err
		}
		loss, err := acc.Reduce([]float64{float64(tensors.ToScalar[float32](m[0]))}, "mean")
		if err != nil {
			return err
		}
		res.Losses = append(res.Losses, loss[0])
		if step == 0 && infAt > 0 && acc.ProcessIndex() == 1 {
			steps := 1
			tr.shard.onShareReduced = func(grad []float32) {
				if steps++; steps == infAt+1 && len(grad) > 0 {
					grad[0] = float32(math.Inf(1))
				}
			}
		}
		if mode == "diverge" && step == 0 && acc.ProcessIndex() == 1 {
			// A bug that touches one process's weights only.
			v := tr.Masters().GetVariableByScopeAndName("/model/out/dense", "biases")
			vals := tensors.MustCopyFlatData[float32](v.MustValue())
			vals[0] += 1e-3
			v.MustSetValue(tensors.FromFlatDataAndDimensions(vals, v.Shape().Dimensions...))
		}
		if saveAt > 0 && step+1 == saveAt {
			if err := acc.SaveState(os.Getenv(envCkpt)); err != nil {
				return err
			}
			res.HeldAfterSave = tr.StateBytes().Parameters
		}
	}
	if mode == "eval" {
		if res.EvalAfter, err = evalLoss(); err != nil {
			return err
		}
	}
	if mode == "gather" {
		// Evaluation on an uneven set: each process predicts its padded
		// share, GatherForMetrics joins the shares and drops the padding.
		d := newToyData()
		const n = 11
		if tr.ParametersReleased() { // FULL_SHARD: Predict needs the parameters gathered first
			if _, err := predictClasses(tr, d, []int{0}); err != nil {
				res.Err = err.Error()
			}
			if err := tr.GatherParameters(); err != nil {
				return err
			}
			defer func() { _ = tr.ReleaseParameters() }()
		}
		idx := acc.SplitIndices(n, true)
		mine, err := predictClasses(tr, d, idx)
		if err != nil {
			return err
		}
		got, err := acc.GatherForMetrics(mine)
		if err != nil {
			return err
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		want, err := predictClasses(tr, d, all)
		if err != nil {
			return err
		}
		res.Gathered, res.Direct = got[0], want
	}
	res.State, res.Released = tr.StateBytes(), tr.ParametersReleased() // between steps, before Parameters32 gathers
	res.Compute = tr.ComputeDType().String()
	if tr.scaler != nil {
		res.Skipped, res.Scale = tr.SkippedSteps(), tr.scaler.GetScale()
	}
	res.Vars = map[string][]float32{}
	names := tr.model.ParameterNames() // the masters, whole (gathered when sharded)
	for i, p := range tr.model.Parameters32() {
		res.Vars[names[i]] = slices.Clone(p)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(os.Getenv(envOut), "rank"+strconv.Itoa(acc.ProcessIndex())+".json"), b, 0o644)
}

func pureGoBackend() backends.Backend {
	b, err := backends.NewWithConfig("go")
	if err != nil {
		panic(err)
	}
	return b
}

// launch runs n workers in mode and returns their results by rank.
func launch(t *testing.T, n int, mode string, env ...string) []workerResult {
	t.Helper()
	st, err := pg.NewStore("127.0.0.1:0", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); st.Serve(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	out := t.TempDir()
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	local := n // processes per node: all on one, unless env says how many nodes
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, envNodes+"="); ok {
			nodes, _ := strconv.Atoi(v)
			local = n / nodes
		}
	}
	for r := range cmds {
		c := exec.Command(os.Args[0], "-test.run=^$")
		node := strconv.Itoa(r / local)
		c.Env = append(os.Environ(), envWorker+"="+mode, envOut+"="+out,
			accelerate.EnvWorldSize+"="+strconv.Itoa(n), accelerate.EnvRank+"="+strconv.Itoa(r), accelerate.EnvLocalRank+"="+strconv.Itoa(r%local),
			accelerate.EnvLocalWorldSize+"="+strconv.Itoa(local), accelerate.EnvNodeRank+"="+node, accelerate.EnvGroupRank+"="+node,
			accelerate.EnvMasterAddr+"=127.0.0.1", accelerate.EnvMasterPort+"="+strconv.Itoa(st.Port()),
			accelerate.EnvLaunchSecret+"="+testSecret, accelerate.EnvUseCPU+"=true", accelerate.EnvCUDAVisible+"=")
		c.Env = append(c.Env, env...)
		c.Stdout, c.Stderr = &outs[r], &outs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	res := make([]workerResult, n)
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", r, err, outs[r].String())
		}
		b, err := os.ReadFile(filepath.Join(out, "rank"+strconv.Itoa(r)+".json"))
		if err != nil {
			t.Fatalf("worker %d wrote no result: %v\n%s", r, err, outs[r].String())
		}
		if err := json.Unmarshal(b, &res[r]); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// Two processes with a global batch of 32 follow one process with a
// batch of 32 step by step: each computes the gradient of its half, the
// all-reduce averages them. The sums differ in the order of additions
// only, so losses agree to float32 rounding; the processes' own weights
// agree to the bit (they apply the same averaged gradients).
func TestTwoProcessesFollowOne(t *testing.T) {
	const steps = 15
	wantLosses, wantVars := referenceRun(t, globalBatch, steps)
	res := launch(t, 2, "train", envSteps+"="+strconv.Itoa(steps))
	for i, want := range wantLosses {
		if got := res[0].Losses[i]; math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Errorf("step %d: 2 processes' loss %.9g, 1 process's %.9g", i, got, want)
		}
	}
	for name, want := range wantVars {
		if d := maxDiff(res[0].Vars[name], want); d > 1e-4 {
			t.Errorf("%s: 2 processes differ from 1 by %g", name, d)
		}
		if d := maxDiff(res[0].Vars[name], res[1].Vars[name]); d != 0 {
			t.Errorf("%s: process 1 differs from process 0 by %g", name, d)
		}
	}
}

// A launch that saves at step 6 and a restarted launch that loads that
// checkpoint and goes on end with the weights of an uninterrupted run, to
// the bit: the masters, the optimizer's moments and step, the data
// position (SkipFirstBatches after acc.Step()).
func TestResumeBitForBit(t *testing.T) {
	const steps, saveAt = 12, 6
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	full := launch(t, 2, "train", envSteps+"="+strconv.Itoa(steps), envSaveAt+"="+strconv.Itoa(saveAt), envCkpt+"="+ckpt)
	for _, f := range []string{"model.safetensors", "optimizer.safetensors"} {
		if _, err := os.Stat(filepath.Join(ckpt, f)); err != nil {
			t.Fatalf("the checkpoint lacks %s: %v", f, err)
		}
	}
	resumed := launch(t, 2, "resume", envSteps+"="+strconv.Itoa(steps), envCkpt+"="+ckpt)
	if resumed[0].Step != saveAt {
		t.Fatalf("the resumed run starts at step %d, want %d", resumed[0].Step, saveAt)
	}
	for i, l := range resumed[0].Losses {
		if want := full[0].Losses[saveAt+i]; l != want {
			t.Errorf("step %d: resumed loss %.9g, uninterrupted %.9g", saveAt+i, l, want)
		}
	}
	for name, want := range full[0].Vars {
		if d := maxDiff(resumed[0].Vars[name], want); d != 0 {
			t.Errorf("%s: the resumed run differs from the uninterrupted one by %g", name, d)
		}
	}
}

// A process whose weights drift from process 0's is named, with the
// variable, at the next check.
func TestDivergenceIsNamed(t *testing.T) {
	res := launch(t, 2, "diverge", envSteps+"=6")
	for r, w := range res {
		if !strings.Contains(w.Err, "the variables of process 1 (first: /model/out/dense/biases) differ from process 0's") {
			t.Errorf("process %d: %q", r, w.Err)
		}
	}
}

// Processes that draw different global batches are stopped at the first
// one, with the reason and the usual cause.
func TestDifferentBatchesAreNamed(t *testing.T) {
	res := launch(t, 2, "unsynced", envSteps+"=3")
	for r, w := range res {
		if !strings.Contains(w.Err, `dataset "toy": batch 1 since the start (or the last Reset) differs between process 0 and process 1`) ||
			!strings.Contains(w.Err, "accelerate.SetSeed") {
			t.Errorf("process %d: %q", r, w.Err)
		}
	}
}

// predictClasses returns the model's predicted class of examples idx.
func predictClasses(tr *Trainer, d *toyData, idx []int) ([]float64, error) {
	x := make([]float32, len(idx)*features)
	for i, k := range idx {
		copy(x[i*features:(i+1)*features], d.x[k*features:(k+1)*features])
	}
	out, err := tr.Predict(tensors.FromFlatDataAndDimensions(x, len(idx), features))
	if err != nil {
		return nil, err
	}
	logits := tensors.MustCopyFlatData[float32](out[0])
	classes := make([]float64, len(idx))
	for i := range idx {
		best := 0
		for c := 1; c < numClasses; c++ {
			if logits[i*numClasses+c] > logits[i*numClasses+best] {
				best = c
			}
		}
		classes[i] = float64(best)
	}
	return classes, nil
}

// Evaluation split between processes (SplitIndices, padded), predicted
// with Predict and joined with GatherForMetrics gives each example's
// prediction once, as one process predicting them all.
// With FULL_SHARD, Predict refuses parameters that are shares, saying
// what to call, and predicts as DDP once they are gathered.
func TestSplitPredictGather(t *testing.T) {
	ddp := launch(t, 2, "gather", envSteps+"=3")
	full := launch(t, 2, "gather", envSteps+"=3", "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD")
	for r, w := range append(ddp, full...) {
		if len(w.Gathered) != 11 || fmt.Sprint(w.Gathered) != fmt.Sprint(w.Direct) {
			t.Errorf("process %d: gathered %v, one process predicts %v", r%2, w.Gathered, w.Direct)
		}
	}
	for r := range 2 {
		if fmt.Sprint(full[r].Direct) != fmt.Sprint(ddp[r].Direct) {
			t.Errorf("process %d: FULL_SHARD predicts %v, DDP %v", r, full[r].Direct, ddp[r].Direct)
		}
		if want := "with FSDP's FULL_SHARD the parameters live as shares between steps: call tr.GatherParameters()"; !strings.Contains(full[r].Err, want) {
			t.Errorf("process %d: Predict on released parameters said %q, want %q", r, full[r].Err, want)
		}
	}
}

// Evaluation on a held-out set split between processes (ShardDataset,
// Eval averaging the processes' means): the same loss as one process
// evaluating the whole set, on every process, before training (identical
// weights: to rounding) and after (within the training's rounding).
func TestEvalAcrossProcesses(t *testing.T) {
	const steps = 8
	one := launch(t, 1, "eval", envSteps+"="+strconv.Itoa(steps))
	two := launch(t, 2, "eval", envSteps+"="+strconv.Itoa(steps))
	full := launch(t, 2, "eval", envSteps+"="+strconv.Itoa(steps), "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD")
	for r, got := range full { // gathered for the evaluation, released after it
		if d := math.Abs(got.EvalAfter-two[r].EvalAfter) / two[r].EvalAfter; d > 1e-5 || got.EvalBefore != two[r].EvalBefore || !got.Released {
			t.Errorf("process %d: FULL_SHARD evaluated %v/%v (released after: %v), DDP %v/%v", r, got.EvalBefore, got.EvalAfter, got.Released, two[r].EvalBefore, two[r].EvalAfter)
		}
	}
	if one[0].EvalBefore <= 0 || one[0].EvalAfter >= one[0].EvalBefore {
		t.Fatalf("one process: held-out loss %v before training, %v after", one[0].EvalBefore, one[0].EvalAfter)
	}
	for r, got := range two {
		if got.EvalBefore != two[0].EvalBefore || got.EvalAfter != two[0].EvalAfter {
			t.Errorf("process %d evaluated %v/%v, process 0 %v/%v", r, got.EvalBefore, got.EvalAfter, two[0].EvalBefore, two[0].EvalAfter)
		}
		if d := math.Abs(got.EvalBefore-one[0].EvalBefore) / one[0].EvalBefore; d > 1e-6 {
			t.Errorf("before training: 2 processes %v, 1 process %v", got.EvalBefore, one[0].EvalBefore)
		}
		if d := math.Abs(got.EvalAfter-one[0].EvalAfter) / one[0].EvalAfter; d > 1e-4 {
			t.Errorf("after %d steps: 2 processes %v, 1 process %v", steps, got.EvalAfter, one[0].EvalAfter)
		}
	}
}

// FSDP's SHARD_GRAD_OP and FULL_SHARD against DDP on 2 and 4 processes:
// 20 AdamW steps (decay on the matrices, clipping by the global norm) on
// the same batches give per-step losses within 1e-5 relative and final
// weights within 1e-4 (the FSDP parity tests' standard), every process
// holding the same weights. Each process's masters and optimizer state are
// at most 1/N + 10% of DDP's; with FULL_SHARD, between steps, everything
// it holds for training (parameters, masters, optimizer state, gradients)
// is.
func TestShardingFollowsDDP(t *testing.T) {
	const steps = 20
	for _, n := range []int{2, 4} {
		common := []string{envSteps + "=" + strconv.Itoa(steps), envAdamW + "=1"}
		var ddp []workerResult
		for _, strategy := range []string{"SHARD_GRAD_OP", "FULL_SHARD"} {
			t.Run(fmt.Sprintf("%s/%d", strategy, n), func(t *testing.T) {
				if ddp == nil {
					ddp = launch(t, n, "train", common...)
				}
				sharded := launch(t, n, "train", append(common, "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY="+strategy)...)
				checkFollowsDDP(t, strategy, sharded, ddp, steps, n)
			})
		}
	}
	// Gradient accumulation: the parameters stay gathered, and the
	// gradients collect, until the synchronising micro-batch.
	t.Run("FULL_SHARD/2/accumulating", func(t *testing.T) {
		common := []string{envSteps + "=" + strconv.Itoa(steps), envAdamW + "=1", envAccum + "=2"}
		ddp := launch(t, 2, "train", common...)
		sharded := launch(t, 2, "train", append(common, "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD")...)
		checkFollowsDDP(t, "FULL_SHARD", sharded, ddp, steps, 2)
	})
	// The hybrid strategies on 2 nodes of 2 processes: each node shards
	// the state in two, and the nodes hold the same shares.
	ddp := launch(t, 4, "train", envSteps+"="+strconv.Itoa(steps), envAdamW+"=1", envNodes+"=2")
	for _, strategy := range []string{"HYBRID_SHARD", "HYBRID_SHARD_ZERO2"} {
		t.Run(strategy+"/2x2", func(t *testing.T) {
			sharded := launch(t, 4, "train", envSteps+"="+strconv.Itoa(steps), envAdamW+"=1", envNodes+"=2",
				"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY="+strategy)
			checkFollowsDDP(t, strategy, sharded, ddp, steps, 2)
		})
	}
}

// checkFollowsDDP compares a sharded run with DDP's; the state is split in
// shards (the processes of a node with the hybrid strategies).
func checkFollowsDDP(t *testing.T, strategy string, sharded, ddp []workerResult, steps, shards int) {
	t.Helper()
	n := len(sharded)
	if len(sharded[0].Losses) != steps {
		t.Fatalf("%d losses", len(sharded[0].Losses))
	}
	for i, want := range ddp[0].Losses {
		if got := sharded[0].Losses[i]; math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Errorf("step %d: %s's loss %.9g, DDP's %.9g", i, strategy, got, want)
		}
	}
	if ddp[0].Losses[steps-1] >= ddp[0].Losses[0] {
		t.Fatalf("DDP did not learn: %v", ddp[0].Losses)
	}
	for name, want := range ddp[0].Vars {
		if d := maxDiff(sharded[0].Vars[name], want); d > 1e-4 || len(sharded[0].Vars[name]) != len(want) {
			t.Errorf("%s: %s differs from DDP by %g", name, strategy, d)
		}
		for r := 1; r < n; r++ {
			if d := maxDiff(sharded[r].Vars[name], sharded[0].Vars[name]); d != 0 {
				t.Errorf("%s: process %d differs from process 0 by %g", name, r, d)
			}
		}
	}
	bound := func(full int64) int64 { return int64(float64(full) * (1/float64(shards) + 0.1)) }
	releases := strategy == "FULL_SHARD" || strategy == "HYBRID_SHARD"
	for r, w := range sharded {
		full, got := ddp[r].State, w.State
		if got.Optimizer == 0 || got.Optimizer > bound(full.Optimizer) || got.Masters > bound(full.Masters) {
			t.Errorf("process %d holds %+v, DDP %+v: want masters and optimizer state ≤ 1/%d + 10%% of DDP's", r, got, full, shards)
		}
		if !releases {
			if w.Released || got.Parameters == 0 {
				t.Errorf("process %d: %s released the parameters (%+v)", r, strategy, got)
			}
			continue
		}
		if !w.Released || got.Total() > bound(full.Total()) || got.Gradients > bound(full.Gradients) ||
			got.Masters+got.Optimizer+got.Gradients > bound(full.Masters+full.Optimizer+full.Gradients) {
			t.Errorf("process %d holds %+v between steps (released: %v), DDP %+v: want every part and the total ≤ 1/%d + 10%% of DDP's", r, got, w.Released, full, shards)
		}
	}
	t.Logf("%d processes: process 0 holds %+v with %s, %+v with DDP", n, sharded[0].State, strategy, ddp[0].State)
}

// A sharded checkpoint resumes: on the same 2 processes to the bit,
// re-sharded on 4 processes and without FSDP within the rounding of a
// different reduction order. With FULL_STATE_DICT it holds the whole
// optimizer state (each variable of a parameter's moments joined from every
// process's share, named as DDP names it); with SHARDED_STATE_DICT each
// process writes its share of the masters and of the optimizer state, and
// loading joins them.
// FULL_SHARD's checkpoints are the same files and resume the same ways, and
// so are HYBRID_SHARD's on 2 nodes of 2 (the first node's shares written,
// the second node's files empty).
func TestShardedCheckpointResumes(t *testing.T) {
	for _, strategy := range []string{"SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"} {
		for _, dict := range []string{"FULL_STATE_DICT", "SHARDED_STATE_DICT"} {
			t.Run(strategy+"/"+dict, func(t *testing.T) { testShardedResume(t, strategy, dict) })
		}
	}
}

func testShardedResume(t *testing.T, strategy, dict string) {
	const steps, saveAt = 12, 6
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	fsdpEnv := []string{"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=" + strategy, "FSDP_STATE_DICT_TYPE=" + dict}
	n, reshard := 2, fsdpEnv
	if strategy == "HYBRID_SHARD" { // on 2 nodes of 2; re-sharded as FULL_SHARD on one node of 4
		n, fsdpEnv = 4, append(fsdpEnv, envNodes+"=2")
		reshard = []string{"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD", "FSDP_STATE_DICT_TYPE=" + dict}
	}
	common := []string{envAdamW + "=1", envSteps + "=" + strconv.Itoa(steps), envCkpt + "=" + ckpt}
	full := launch(t, n, "train", append(append(common, fsdpEnv...), envSaveAt+"="+strconv.Itoa(saveAt))...)
	const moment = "/adamw/model/hidden/dense/weights_exp_avg"
	if dict == "FULL_STATE_DICT" {
		f, err := safetensors.ReadFile(filepath.Join(ckpt, "optimizer.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := f.Tensor(moment)
		if !ok || fmt.Sprint(m.Shape) != fmt.Sprint([]int{features, 16}) {
			names := []string{}
			for _, x := range f.Tensors {
				names = append(names, x.Name)
			}
			t.Fatalf("the checkpoint lacks the whole %s (%v): %v", moment, m.Shape, names)
		}
	} else {
		for _, base := range []string{"model", "optimizer"} {
			for r := 0; r < n; r++ {
				if _, err := os.Stat(filepath.Join(ckpt, checkpoint.ShardFile(base, r, n))); err != nil {
					t.Errorf("no shard of process %d: %v", r, err)
				}
			}
			if _, err := os.Stat(filepath.Join(ckpt, base+".safetensors")); err == nil {
				t.Errorf("a sharded state dict also wrote the whole %s.safetensors", base)
			}
		}
		f, err := safetensors.ReadFile(filepath.Join(ckpt, checkpoint.ShardFile("optimizer", 1, n)))
		if err != nil {
			t.Fatal(err)
		}
		var share int
		for _, x := range f.Tensors {
			if strings.HasPrefix(x.Name, "/adamw/model/") {
				share += x.Shape[0]
			}
		}
		if share == 0 || share > 2*(features*16+16+16*classes+classes) {
			t.Errorf("process 1's shard holds %d moment values", share)
		}
	}
	if strategy == "FULL_SHARD" {
		// SHARDED_STATE_DICT writes each process's share without gathering
		// the whole parameters; FULL_STATE_DICT gathers them, as torch does.
		for r, w := range full {
			if sharded := dict == "SHARDED_STATE_DICT"; sharded != (w.HeldAfterSave == 0) {
				t.Errorf("process %d held %d bytes of weights after saving a %s", r, w.HeldAfterSave, dict)
			}
		}
	}
	for _, c := range []struct {
		name string
		n    int
		env  []string
		tol  float64 // 0: to the bit
	}{
		{"the same processes", n, fsdpEnv, 0},
		{"re-sharded on 4", 4, reshard, 1e-5},
		{"DDP on 2", 2, nil, 1e-5},
	} {
		t.Run(c.name, func(t *testing.T) {
			resumed := launch(t, c.n, "resume", append(common, c.env...)...)
			if resumed[0].Step != saveAt {
				t.Fatalf("resumed at step %d, want %d", resumed[0].Step, saveAt)
			}
			for i, l := range resumed[0].Losses {
				want := full[0].Losses[saveAt+i]
				if d := math.Abs(l - want); d > c.tol*math.Max(1, math.Abs(want)) {
					t.Errorf("step %d: resumed loss %.9g, uninterrupted %.9g", saveAt+i, l, want)
				}
			}
			for name, want := range full[0].Vars {
				if d := maxDiff(resumed[0].Vars[name], want); d > 10*c.tol {
					t.Errorf("%s: the resumed run differs from the uninterrupted one by %g", name, d)
				}
			}
		})
	}
}

// The hybrid strategies need the launchers' numbering (rank = node ·
// processes per node + local rank): a group numbered otherwise is refused
// on every process, naming the rank and the layout.
func TestHybridNeedsRanksByNode(t *testing.T) {
	res := launch(t, 4, "refused", envSteps+"=2", envNodes+"=2", "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=HYBRID_SHARD",
		accelerate.EnvLocalRank+"=0") // every process claims local rank 0
	for r, w := range res {
		want := fmt.Sprintf("FSDP's HYBRID_SHARD: rank %d is local rank 0 of 2 processes per node, in a group of 4: it needs the same number of processes on every node, numbered node by node", r)
		if r%2 == 0 {
			want = "" // consistent: ranks 0 and 2 are local rank 0
		}
		if want != "" && !strings.Contains(w.Err, want) {
			t.Errorf("process %d: %q, want %q", r, w.Err, want)
		}
	}
}

// fp16's loss scaler under FSDP (on float32 arithmetic: the pure-Go
// backend has no float16): with a scale of 2^10 the sharded steps are
// DDP's unscaled ones; when one process's share of the gradients
// overflows, every process skips that step and backs the scale off, and
// they keep the same weights.
func TestShardedLossScaler(t *testing.T) {
	const steps = 8
	common := []string{envSteps + "=" + strconv.Itoa(steps), envAdamW + "=1"}
	ddp := launch(t, 2, "train", common...)
	for _, strategy := range []string{"SHARD_GRAD_OP", "FULL_SHARD"} {
		t.Run(strategy, func(t *testing.T) {
			fsdpEnv := append(common, "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY="+strategy, envScale+"=1024")
			scaled := launch(t, 2, "train", fsdpEnv...)
			checkFollowsDDP(t, strategy, scaled, ddp, steps, 2)
			for r, w := range scaled {
				if w.Skipped != 0 || w.Scale != 1024 {
					t.Errorf("process %d: %d steps skipped, scale %v; want none and 1024", r, w.Skipped, w.Scale)
				}
			}
			overflow := launch(t, 2, "train", append(fsdpEnv, envInfAt+"=3")...)
			for r, w := range overflow {
				if w.Skipped != 1 || w.Scale != 512 {
					t.Errorf("process %d: %d steps skipped, scale %v; want the third skipped on every process and the scale halved", r, w.Skipped, w.Scale)
				}
				for name, want := range overflow[0].Vars {
					if d := maxDiff(w.Vars[name], want); d != 0 {
						t.Errorf("%s: process %d differs from process 0 by %g", name, r, d)
					}
				}
			}
			for i := range 3 { // the steps before the skipped one are the clean run's
				if overflow[0].Losses[i] != scaled[0].Losses[i] {
					t.Errorf("step %d: loss %v, the clean run's %v", i, overflow[0].Losses[i], scaled[0].Losses[i])
				}
			}
		})
	}
}

// FSDP's mixed-precision policy: gradients reduced in bfloat16 (16-bit
// values on the wire, each partial sum rounded) follow float32's DDP within
// bfloat16's precision, and differ from the float32 reduction (the policy
// acts); parameters in bfloat16 compute as the Accelerator's bf16 mixed
// precision does. What contradicts the Accelerator is refused.
func TestMixedPrecisionPolicy(t *testing.T) {
	const steps = 10
	common := []string{envSteps + "=" + strconv.Itoa(steps), envAdamW + "=1"}
	ddp := launch(t, 2, "train", common...)
	ddpBF16 := launch(t, 2, "train", append(common, accelerate.EnvMixedPrecision+"=bf16")...)
	for _, strategy := range []string{"SHARD_GRAD_OP", "FULL_SHARD"} {
		fsdpEnv := append(common, "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY="+strategy)
		t.Run(strategy, func(t *testing.T) {
			fp32 := launch(t, 2, "train", fsdpEnv...)
			for _, c := range []struct {
				policy, compute string
				ref             []workerResult
			}{
				{",bf16", "Float32", ddp},      // reduce in bfloat16 only
				{"bf16,", "BFloat16", ddpBF16}, // compute, gather and reduce in bfloat16
			} {
				got := launch(t, 2, "train", append(fsdpEnv, envPolicy+"="+c.policy)...)
				same := true
				for i, want := range c.ref[0].Losses {
					if d := math.Abs(got[0].Losses[i]-want) / math.Abs(want); d > 2e-2 {
						t.Errorf("policy %q, step %d: loss %.6g, the reference's %.6g", c.policy, i, got[0].Losses[i], want)
					}
					same = same && got[0].Losses[i] == fp32[0].Losses[i]
				}
				if same && c.compute == "Float32" {
					t.Errorf("policy %q: the same losses as the float32 reduction: the gradients were not reduced in bfloat16", c.policy)
				}
				for r, w := range got {
					if w.Compute != c.compute {
						t.Errorf("policy %q, process %d computed in %s, want %s", c.policy, r, w.Compute, c.compute)
					}
					for name, want := range got[0].Vars {
						if d := maxDiff(w.Vars[name], want); d != 0 {
							t.Errorf("policy %q: %s differs between processes 0 and %d by %g", c.policy, name, r, d)
						}
					}
				}
			}
		})
	}
	// FULL_SHARD all-gathers bfloat16 parameters as bfloat16 (half the
	// traffic): the values SHARD_GRAD_OP's float32 all-gather gives once
	// converted, so the same steps to the bit.
	var runs [2][]workerResult
	for i, strategy := range []string{"SHARD_GRAD_OP", "FULL_SHARD"} {
		runs[i] = launch(t, 2, "train", append(common, "ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY="+strategy, envPolicy+"=bf16,fp32")...)
	}
	if fmt.Sprint(runs[0][0].Losses) != fmt.Sprint(runs[1][0].Losses) {
		t.Errorf("bfloat16 parameters: SHARD_GRAD_OP's losses %v, FULL_SHARD's %v", runs[0][0].Losses, runs[1][0].Losses)
	}
	for policy, want := range map[string]string{
		"fp16,": "FSDP's mixed-precision policy computes in float16, which needs fp16's loss scaler",
		",bf16": "under NO_SHARD the gradients are DDP's: set DistributedDataParallelKwargs' comm_hook",
	} {
		env := []string{envSteps + "=1", envPolicy + "=" + policy, "FSDP_SHARDING_STRATEGY=SHARD_GRAD_OP"}
		if policy == ",bf16" {
			env[2] = "FSDP_SHARDING_STRATEGY=NO_SHARD"
		}
		for r, w := range launch(t, 2, "refused", env...) {
			if !strings.Contains(w.Err, want) {
				t.Errorf("policy %q, process %d: %q, want %q", policy, r, w.Err, want)
			}
		}
	}
}
