// Command fsdp measures a training step of a GoMLX model under FSDP's
// SHARD_GRAD_OP (accelerate/gomlx: float32 masters and optimizer state
// sharded, gradients reduce-scattered, parameters all-gathered) and
// FULL_SHARD (the parameters too are shares between steps, gathered before
// the next) beside DDP, on 2 and 4 CPU worker processes started by
// goaccel's launcher as `goaccel launch` starts them, interleaved round by
// round on the same cores: the median step time of each, their ratio, and
// per process the bytes it holds between steps (weights, masters, optimizer
// state, gradients) and the peak resident memory (VmHWM).
//
//	go run ./bench/fsdp [-np 2,4] [-rounds 3] [-steps 30] [-width 1024] [-depth 4]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"

	"github.com/goaccel/goaccel/accelerate"
	gxa "github.com/goaccel/goaccel/accelerate/gomlx"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
)

const (
	envWorker = "GOACCEL_FSDP_BENCH_OUT" // set in workers: where to write their result
	classes   = 16
	batch     = 64 // the global batch
)

type config struct {
	Steps, Width, Depth int
}

// result is what one worker measured.
type result struct {
	Rank      int
	StepMs    float64 // median over the steps after the warm-up
	State     gxa.StateBytes
	PeakRSSKB int64
	Params    int
	// Where the host half of a step went, per step on average.
	GatherMs, ToHostMs, ReduceMs, ApplyMs float64
}

func main() {
	if out := os.Getenv(envWorker); out != "" {
		var cfg config
		if err := json.Unmarshal([]byte(os.Getenv("GOACCEL_FSDP_BENCH_CONFIG")), &cfg); err != nil {
			fail(err)
		}
		if err := worker(out, cfg); err != nil {
			fail(err)
		}
		return
	}
	nps := flag.String("np", "2,4", "process counts")
	rounds := flag.Int("rounds", 3, "rounds (each runs DDP, SHARD_GRAD_OP and FULL_SHARD once per process count)")
	var cfg config
	flag.IntVar(&cfg.Steps, "steps", 30, "training steps per run (the first 5 are warm-up)")
	flag.IntVar(&cfg.Width, "width", 1024, "width of the MLP's hidden layers")
	flag.IntVar(&cfg.Depth, "depth", 4, "hidden layers")
	flag.Parse()
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	modes := []string{"DDP", "SHARD_GRAD_OP", "FULL_SHARD"}
	all := map[string][]result{} // "np/mode" → rank 0's result per round
	for r := 0; r < *rounds; r++ {
		for _, s := range strings.Split(*nps, ",") {
			np, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				fail(fmt.Errorf("-np %q: %w", *nps, err))
			}
			for _, mode := range modes {
				res, err := launch(exe, np, mode, cfg)
				if err != nil {
					fail(fmt.Errorf("%d processes, %s: %w", np, mode, err))
				}
				key := fmt.Sprintf("%d/%s", np, mode)
				all[key] = append(all[key], res...)
				r0 := res[0]
				fmt.Printf("round %d: %d processes %-13s step %7.2f ms (rank 0: gather %.2f, to host %.2f, reduce %.2f, update %.2f)\n",
					r+1, np, mode, r0.StepMs, r0.GatherMs, r0.ToHostMs, r0.ReduceMs, r0.ApplyMs)
			}
		}
	}
	fmt.Printf("\nMLP %d×%d (width %d, depth %d), global batch %d, AdamW; medians over %d rounds of rank 0; bytes per process\n\n",
		cfg.Width, cfg.Width, cfg.Width, cfg.Depth, batch, *rounds)
	fmt.Println("| processes | strategy | step ms | × DDP | weights | masters | optimizer state | gradients | total | peak RSS MiB (max rank) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range strings.Split(*nps, ",") {
		np := strings.TrimSpace(s)
		ddp := median(rank0(all[np+"/DDP"]))
		for _, mode := range modes {
			rs := all[np+"/"+mode]
			r0 := rank0(rs)
			peak := int64(0)
			for _, r := range rs {
				peak = max(peak, r.PeakRSSKB)
			}
			last := r0[len(r0)-1]
			fmt.Printf("| %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %.0f |\n", np, mode, median(r0), median(r0)/ddp,
				mib(last.State.Parameters), mib(last.State.Masters), mib(last.State.Optimizer), mib(last.State.Gradients),
				mib(last.State.Total()), float64(peak)/1024)
		}
	}
}

func rank0(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.Rank == 0 {
			out = append(out, r)
		}
	}
	return out
}

func median(rs []result) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = r.StepMs
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// launch runs one training run on np worker processes and returns every
// rank's result.
func launch(exe string, np int, mode string, cfg config) ([]result, error) {
	dir, err := os.MkdirTemp("", "goaccel-fsdp-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, _ := json.Marshal(cfg)
	env := map[string]string{envWorker: dir, "GOACCEL_FSDP_BENCH_CONFIG": string(b)}
	if mode != "DDP" {
		env["ACCELERATE_USE_FSDP"], env["FSDP_SHARDING_STRATEGY"] = "true", mode
	}
	opts := launcher.Options{NumProcesses: np, UseCPU: true, UsePort: "0", Env: env}
	pub := &stderrOnly{}
	if err := launcher.LaunchProgram(context.Background(), []string{exe}, opts, pub); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, pub.text.String())
	}
	out := make([]result, np)
	for r := range out {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d.json", r)))
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &out[r]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stderrOnly keeps the workers' error output for a failure's message.
type stderrOnly struct{ text strings.Builder }

func (p *stderrOnly) Stream(name, text string) {
	if name == "stderr" {
		p.text.WriteString(text)
	}
}
func (p *stderrOnly) Display(frontend.MIMEBundle, map[string]any, string)       {}
func (p *stderrOnly) UpdateDisplay(frontend.MIMEBundle, map[string]any, string) {}
func (p *stderrOnly) ClearOutput(bool)                                          {}

// worker trains the MLP for cfg.Steps steps under the launch's Accelerator
// (FSDP from the environment) and writes its result.
func worker(out string, cfg config) error {
	acc, err := accelerate.NewAccelerator(accelerate.WithLiveChart(false))
	if err != nil {
		return err
	}
	defer acc.EndTraining()
	backend, err := gxa.AcceleratorBackend(acc)
	if err != nil {
		return err
	}
	ctx := mlctx.New()
	ctx.SetParam(mlctx.ParamInitialSeed, int64(1))
	model := func(ctx *mlctx.Context, _ any, inputs []*graph.Node) []*graph.Node {
		h := inputs[0]
		for i := 0; i < cfg.Depth; i++ {
			h = activations.Relu(layers.Dense(ctx.In(fmt.Sprintf("hidden%d", i)), h, true, cfg.Width))
		}
		return []*graph.Node{layers.Dense(ctx.In("out"), h, true, classes)}
	}
	tr, err := gxa.NewTrainer(acc, backend, ctx, model, losses.SparseCategoricalCrossEntropyLogits,
		gxa.AdamW().LearningRate(1e-4), nil, nil, gxa.WithClipGradNorm(1, 2))
	if err != nil {
		return err
	}
	local := batch / acc.NumProcesses()
	rng := rand.New(rand.NewPCG(1, uint64(acc.ProcessIndex())))
	x := make([]float32, local*cfg.Width)
	y := make([]int32, local)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range y {
		y[i] = int32(rng.IntN(classes))
	}
	in := []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, local, cfg.Width)}
	labels := []*tensors.Tensor{tensors.FromFlatDataAndDimensions(y, local, 1)}
	var times []float64
	for step := 0; step < cfg.Steps; step++ {
		start := time.Now()
		if _, err := tr.TrainStep(nil, in, labels); err != nil {
			return err
		}
		if step >= 5 {
			times = append(times, float64(time.Since(start).Microseconds())/1000)
		}
	}
	slices.Sort(times)
	// Between steps; before MasterValues gathers the whole masters.
	res := result{Rank: acc.ProcessIndex(), State: tr.StateBytes(), PeakRSSKB: peakRSS()}
	if len(times) > 0 {
		res.StepMs = times[len(times)/2]
	}
	for _, p := range tr.MasterValues() {
		res.Params += len(p)
	}
	st := tr.Stats()
	if st.Steps > 0 {
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(st.Steps) }
		res.GatherMs, res.ToHostMs, res.ReduceMs, res.ApplyMs = per(st.Gather), per(st.ToHost), per(st.AllReduce), per(st.Apply)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, fmt.Sprintf("rank%d.json", res.Rank)), b, 0o644)
}

// peakRSS is VmHWM from /proc/self/status, in KiB (0 where there is none).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/fsdp:", err)
	os.Exit(1)
}
