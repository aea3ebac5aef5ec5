package resumetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/accelerate/ddp"
	"github.com/goaccel/goaccel/accelerate/nn"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
	"gonum.org/v1/gonum/mat"
)

var reg = launchertest.New()

func TestMain(m *testing.M) {
	reg.Register("train", train)
	reg.Register("gather", gather)
	os.Exit(launchertest.Main(m, reg))
}

// Config is one training run.
type Config struct {
	Dir    string // project directory: checkpoints/ and the tracker file
	Steps  int
	Every  int // checkpoint after every Every steps
	KillAt int // rank 1 kills itself (SIGKILL) at the start of this step of the first attempt; -1: never
	Batch  int // global batch
}

// Result is what each rank returns.
type Result struct {
	Params    [][]float64
	StartStep int
	Restarts  int
	Epochs    int // the registered progress object, after training
}

// Progress is a registered object (a pointer saved as JSON).
type Progress struct{ Optimizer int }

// stepTracker is a tracker that appends every logged step to a file (one
// line per Log: "attempt step loss").
type stepTracker struct {
	path    string
	attempt int
}

func (t *stepTracker) Name() string                                { return "steps" }
func (t *stepTracker) RequiresLoggingDirectory() bool              { return false }
func (t *stepTracker) MainProcessOnly() bool                       { return true }
func (t *stepTracker) Tracker() any                                { return t.path }
func (t *stepTracker) Start() error                                { return nil }
func (t *stepTracker) StoreInitConfiguration(map[string]any) error { return nil }
func (t *stepTracker) Finish() error                               { return nil }
func (t *stepTracker) Log(v map[string]any, step int, _ map[string]any) error {
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "%d %d %v\n", t.attempt, step, v["loss"])
	return f.Close()
}

func data() (*mat.Dense, []int) {
	n := 64
	x := mat.NewDense(n, 2, nil)
	y := make([]int, n)
	for i := 0; i < n; i++ {
		a := float64(i) / float64(n) * 4 * math.Pi
		c := i % 2
		r := 0.2 + 0.8*float64(i)/float64(n)
		x.Set(i, 0, r*math.Cos(a+float64(c)*math.Pi))
		x.Set(i, 1, r*math.Sin(a+float64(c)*math.Pi))
		y[i] = c
	}
	return x, y
}

// train is the launched training function: it resumes from the newest
// checkpoint when there is one, draws its batches from goaccel's RNG, and
// checkpoints every cfg.Every steps.
func train(cfg Config) (Result, error) {
	accelerate.SetSeed(11, false)
	probe, err := accelerate.NewAccelerator()
	if err != nil {
		return Result{}, err
	}
	tr := &stepTracker{path: filepath.Join(cfg.Dir, "steps.log"), attempt: probe.RestartCount()}
	acc, err := accelerate.NewAccelerator(
		accelerate.WithProjectConfiguration(accelerate.ProjectConfiguration{ProjectDir: cfg.Dir, AutomaticCheckpointNaming: true, TotalLimit: 2}),
		accelerate.WithLogWith(tr), accelerate.WithLiveChart(false))
	if err != nil {
		return Result{}, err
	}
	defer acc.EndTraining()
	if err := acc.InitTrackers("resume", nil, nil); err != nil {
		return Result{}, err
	}
	x, y := data()
	model, err := nn.NewMLP([]int{2, 16, 2}, nn.Tanh, 3)
	if err != nil {
		return Result{}, err
	}
	opt := nn.NewAdam(model, 0.05)
	out, err := acc.Prepare(model, opt)
	if err != nil {
		return Result{}, err
	}
	d := out[0].(*ddp.DDP)
	progress := &Progress{}
	if err := acc.RegisterForCheckpointing(progress); err != nil {
		return Result{}, err
	}
	if err := acc.LoadState(""); err != nil && !errors.Is(err, accelerate.ErrNoCheckpoint) {
		return Result{}, err
	}
	res := Result{StartStep: acc.Step(), Restarts: acc.RestartCount()}
	lo, hi := acc.SplitBetweenProcesses(cfg.Batch)
	for step := acc.Step(); step < cfg.Steps; step++ {
		if step == cfg.KillAt && acc.RestartCount() == 0 && acc.ProcessIndex() == 1 {
			// A worker dies mid-run, before this step: process 0 waits
			// for it in the step's first collective, so neither logs it.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		idx := accelerate.RNG().Perm(len(y))[:cfg.Batch]
		xb, yb := nn.Batch(x, y, idx[lo:hi])
		var loss float64
		err := acc.Accumulate(d, func() error {
			var g *mat.Dense
			loss, g = nn.CrossEntropy(model.Forward(xb), yb)
			model.Backward(g)
			return nil
		})
		if err != nil {
			return res, err
		}
		if _, err := acc.ClipGradNorm(d, 1, 2); err != nil {
			return res, err
		}
		opt.Step()
		opt.ZeroGrad()
		progress.Optimizer++
		mean, err := acc.Reduce([]float64{loss}, "mean")
		if err != nil {
			return res, err
		}
		if err := acc.Log(map[string]any{"loss": mean[0]}, step, nil); err != nil {
			return res, err
		}
		if (step+1)%cfg.Every == 0 {
			if err := acc.SaveState(""); err != nil {
				return res, err
			}
		}
	}
	res.Params = model.StateDict()
	res.Epochs = progress.Optimizer
	return res, nil
}

func launch(t *testing.T, fn any, args []any, o launcher.Options) ([][]any, *launchertest.Publisher) {
	t.Helper()
	pub := &launchertest.Publisher{}
	restore := launcher.SetCell(context.Background(), pub)
	defer restore()
	res, err := launcher.NotebookLauncher(fn, args, o)
	if err != nil {
		t.Fatalf("launch: %v\nstdout:\n%s\nstderr:\n%s", err, pub.Text("stdout"), pub.Text("stderr"))
	}
	return res, pub
}

func results(t *testing.T, res [][]any) []Result {
	t.Helper()
	var out []Result
	for r, rr := range res {
		b, _ := json.Marshal(rr[0])
		var x Result
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		out = append(out, x)
	}
	return out
}

func TestKilledWorkerResumesBitForBit(t *testing.T) {
	const steps, every, kill = 20, 5, 12
	ref := t.TempDir()
	cut := t.TempDir()
	o := launcher.Options{NumProcesses: 2, UsePort: "0"}
	refRes := results(t, launchRes(t, Config{Dir: ref, Steps: steps, Every: every, KillAt: -1, Batch: 16}, o))
	o.MaxRestarts = 1
	res, pub := launch(t, train, []any{Config{Dir: cut, Steps: steps, Every: every, KillAt: kill, Batch: 16}}, o)
	cutRes := results(t, res)
	if !strings.Contains(pub.Text("stderr"), "restarting all 2 workers (restart 1 of 1)") {
		t.Fatalf("the group was not restarted:\n%s", pub.Text("stderr"))
	}
	for r := range cutRes {
		if cutRes[r].Restarts != 1 || cutRes[r].StartStep != 10 {
			t.Errorf("rank %d: restart %d, resumed at step %d; want restart 1 at step 10 (the last checkpoint before step %d)", r, cutRes[r].Restarts, cutRes[r].StartStep, kill)
		}
		if cutRes[r].Epochs != steps || refRes[r].Epochs != steps {
			t.Errorf("rank %d: the registered counter reached %d (uninterrupted %d), want %d", r, cutRes[r].Epochs, refRes[r].Epochs, steps)
		}
		for i, p := range refRes[r].Params {
			for j, v := range p {
				if math.Float64bits(v) != math.Float64bits(cutRes[r].Params[i][j]) {
					t.Fatalf("rank %d parameter %d[%d]: %v after the restart, %v uninterrupted", r, i, j, cutRes[r].Params[i][j], v)
				}
			}
		}
	}

	// The tracker file: attempt 0 logged steps 0..kill-1, attempt 1 resumed at
	// the checkpoint (step 10), so no step before it was done twice, and
	// the losses of the steps redone match the ones first logged.
	b, err := os.ReadFile(filepath.Join(cut, "steps.log"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	first := map[int]string{}
	var attempt1 []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a, s int
		var loss string
		fmt.Sscan(line, &a, &s, &loss)
		count[s]++
		if prev, ok := first[s]; ok && prev != loss {
			t.Errorf("step %d logged loss %s then %s", s, prev, loss)
		}
		first[s] = loss
		if a == 1 {
			attempt1 = append(attempt1, s)
		}
	}
	for s := 0; s < steps; s++ {
		want := 1
		if s >= 10 && s < kill {
			want = 2 // done before the kill, redone after the restart
		}
		if count[s] != want {
			t.Errorf("step %d logged %d times, want %d", s, count[s], want)
		}
	}
	if !sort.IntsAreSorted(attempt1) || len(attempt1) != steps-10 || attempt1[0] != 10 {
		t.Errorf("the restarted attempt logged steps %v, want 10..%d", attempt1, steps-1)
	}
	refLog, _ := os.ReadFile(filepath.Join(ref, "steps.log"))
	for _, line := range strings.Split(strings.TrimSpace(string(refLog)), "\n") {
		var a, s int
		var loss string
		fmt.Sscan(line, &a, &s, &loss)
		if first[s] != loss {
			t.Errorf("step %d: loss %s uninterrupted, %s in the interrupted run", s, loss, first[s])
		}
	}

	// TotalLimit 2: the two newest checkpoints remain, nothing half-written.
	entries, _ := os.ReadDir(filepath.Join(cut, "checkpoints"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "checkpoint_2 checkpoint_3" {
		t.Errorf("checkpoints/ holds %v, want checkpoint_2 checkpoint_3", names)
	}
}

func launchRes(t *testing.T, cfg Config, o launcher.Options) [][]any {
	res, _ := launch(t, train, []any{cfg}, o)
	return res
}

// gather checks GatherForMetrics across real processes: n items split with
// padding, gathered per batch of 2, come back once each.
func gather(n int) ([]float64, error) {
	acc, err := accelerate.NewAccelerator()
	if err != nil {
		return nil, err
	}
	defer acc.EndTraining()
	idx := acc.SplitIndices(n, true)
	var all []float64
	for i := 0; i < len(idx); i += 2 {
		var vals, labels []float64
		for _, j := range idx[i:min(i+2, len(idx))] {
			vals = append(vals, float64(j))
			labels = append(labels, float64(10*j))
		}
		got, err := acc.GatherForMetrics(vals, labels)
		if err != nil {
			return nil, err
		}
		for k := range got[0] {
			if got[1][k] != 10*got[0][k] {
				return nil, fmt.Errorf("labels %v do not follow values %v", got[1], got[0])
			}
		}
		all = append(all, got[0]...)
	}
	// A second evaluation pass over the same split gives the same items.
	whole := make([]float64, len(idx))
	for i, j := range idx {
		whole[i] = float64(j)
	}
	again, err := acc.GatherForMetrics(whole)
	if err != nil {
		return nil, err
	}
	if fmt.Sprint(again[0]) != fmt.Sprint(sorted(all)) {
		return nil, fmt.Errorf("whole-share gather %v, batched %v", again[0], all)
	}
	return all, nil
}

func sorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

func TestGatherForMetricsDropsPadding(t *testing.T) {
	for _, c := range []struct{ procs, n int }{{2, 5}, {3, 4}, {3, 2}, {2, 6}} {
		res, _ := launch(t, gather, []any{c.n}, launcher.Options{NumProcesses: c.procs, UsePort: "0"})
		for r, rr := range res {
			b, _ := json.Marshal(rr[0])
			var got []float64
			json.Unmarshal(b, &got)
			got = sorted(got)
			if len(got) != c.n {
				t.Errorf("%d processes, %d items: rank %d gathered %v", c.procs, c.n, r, got)
				continue
			}
			for i, v := range got {
				if v != float64(i) {
					t.Errorf("%d processes, %d items: rank %d gathered %v, want each item once", c.procs, c.n, r, got)
					break
				}
			}
		}
	}
}
