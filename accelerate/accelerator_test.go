package accelerate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/accelerate/pg"
)

func fresh(t *testing.T) {
	t.Helper()
	ResetState()
	t.Cleanup(ResetState)
}

func TestSingleProcess(t *testing.T) {
	fresh(t)
	if StateInitialized() {
		t.Fatal("state initialized before NewAccelerator")
	}
	var out bytes.Buffer
	a, err := NewAccelerator(withEnv(envMap(nil)), WithOutput(&out))
	if err != nil {
		t.Fatal(err)
	}
	if !StateInitialized() {
		t.Fatal("StateInitialized false after NewAccelerator")
	}
	if a.ProcessIndex() != 0 || a.LocalProcessIndex() != 0 || a.NumProcesses() != 1 || !a.IsMainProcess() || !a.IsLocalMainProcess() || !a.IsLastProcess() {
		t.Fatalf("indices: %v", a)
	}
	if a.Device() != "cpu" || a.MixedPrecision() != "no" || a.DistributedType() != "NO" || a.Timeout() != DefaultCPUTimeout || a.Group() != nil {
		t.Fatalf("single process: %v timeout %v", a, a.Timeout())
	}
	a.Print("hello", 42)
	if out.String() != "hello 42\n" {
		t.Fatalf("Print wrote %q", out.String())
	}
	ran := 0
	a.OnMainProcess(func() { ran++ })
	a.OnLocalMainProcess(func() { ran++ })
	a.OnLastProcess(func() { ran++ })
	a.OnProcess(0, func() { ran++ })
	a.OnProcess(1, func() { ran += 100 })
	if err := a.MainProcessFirst(func() { ran++ }); err != nil {
		t.Fatal(err)
	}
	if err := a.LocalMainProcessFirst(func() { ran++ }); err != nil {
		t.Fatal(err)
	}
	if ran != 6 {
		t.Fatalf("ran = %d, want 6", ran)
	}

	// Collectives are identities.
	if err := a.WaitForEveryone(); err != nil {
		t.Fatal(err)
	}
	buf := []float32{1, 2}
	if err := a.AllReduceFloat32(buf, "sum"); err != nil || buf[1] != 2 {
		t.Fatalf("AllReduceFloat32: %v %v", buf, err)
	}
	if r, err := a.Reduce([]float64{3}, ""); err != nil || r[0] != 3 {
		t.Fatalf("Reduce: %v %v", r, err)
	}
	if _, err := a.Reduce([]float64{3}, "prod"); err == nil {
		t.Fatal("Reduce(prod) accepted")
	}
	if g, err := a.GatherFloat64s([]float64{1, 2}); err != nil || fmt.Sprint(g) != "[1 2]" {
		t.Fatalf("GatherFloat64s: %v %v", g, err)
	}
	if g, err := a.GatherObject(map[string]int{"a": 1}); err != nil || fmt.Sprint(g) != "[map[a:1]]" {
		t.Fatalf("GatherObject: %v %v", g, err)
	}
	v := 5
	if err := a.BroadcastObject(&v, 0); err != nil || v != 5 {
		t.Fatalf("BroadcastObject: %v %v", v, err)
	}
	if err := a.BroadcastFloat64s([]float64{1}, 1); err == nil {
		t.Fatal("root 1 accepted in a single process")
	}

	// A second Accelerator shares the state; a conflicting one is refused.
	b, err := NewAccelerator(withEnv(envMap(nil)))
	if err != nil || b.st != a.st {
		t.Fatalf("second NewAccelerator: %v (shared %v)", err, b != nil && b.st == a.st)
	}
	if _, err := NewAccelerator(withEnv(envMap(nil)), WithMixedPrecision("bf16")); err == nil || !strings.Contains(err.Error(), `already been initialized with mixed_precision="no"`) {
		t.Fatalf("conflicting precision: %v", err)
	}
	if err := a.EndTraining(); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitForEveryone(); err != nil {
		t.Fatalf("single process after EndTraining: %v", err)
	}
	if !StateInitialized() {
		t.Fatal("EndTraining cleared the state; only ResetState should")
	}
	ResetState()
	if StateInitialized() {
		t.Fatal("StateInitialized true after ResetState")
	}
}

func TestMixedPrecision(t *testing.T) {
	cases := []struct {
		env  string
		opt  string
		want string
		err  string
	}{
		{"", "", "no", ""},
		{"BF16", "", "bf16", ""},
		{"bf16", "no", "no", ""},
		{"", "fp8", "fp8", ""},
		{"", "fp32", "", "Unknown mixed_precision mode: fp32. Choose between ['no', 'fp8', 'fp16', 'bf16']"},
		{"half", "", "", "ACCELERATE_MIXED_PRECISION: Unknown mixed_precision mode: half. Choose between ['no', 'fp8', 'fp16', 'bf16']"},
		{"fp16", "", "", "fp16 mixed precision requires a GPU (not 'cpu')"},
	}
	for _, c := range cases {
		fresh(t)
		opts := []Option{withEnv(envMap(map[string]string{EnvMixedPrecision: c.env}))}
		if c.opt != "" {
			opts = append(opts, WithMixedPrecision(c.opt))
		}
		a, err := NewAccelerator(opts...)
		if c.err != "" {
			if err == nil || !strings.HasSuffix(err.Error(), c.err) {
				t.Errorf("env %q opt %q: err = %v, want %q", c.env, c.opt, err, c.err)
			}
			if StateInitialized() {
				t.Errorf("failed NewAccelerator left state behind")
			}
			continue
		}
		if err != nil || a.MixedPrecision() != c.want {
			t.Errorf("env %q opt %q: %v, %v; want %s", c.env, c.opt, a, err, c.want)
		}
	}
}

func TestDevice(t *testing.T) {
	cases := []struct {
		env     map[string]string
		cpu     *bool
		gpus    int // the machine's, as NVML counts them
		device  string
		visible string
		timeout time.Duration
		err     string
	}{
		{env: map[string]string{}, device: "cpu"},
		// CUDA_VISIBLE_DEVICES unset: every GPU of the machine is visible.
		{env: map[string]string{}, gpus: 2, device: "cuda:0", visible: "0", timeout: DefaultGPUTimeout},
		{env: map[string]string{EnvCUDAVisible: ""}, gpus: 2, device: "cpu"},
		{env: map[string]string{EnvUseCPU: "yes"}, gpus: 2, device: "cpu"},
		{env: map[string]string{}, gpus: 1, cpu: ptr(false), device: "cuda:0", visible: "0", timeout: DefaultGPUTimeout},
		{env: map[string]string{EnvCUDAVisible: ""}, device: "cpu"},
		{env: map[string]string{EnvCUDAVisible: "0"}, device: "cuda:0", visible: "0", timeout: DefaultGPUTimeout},
		{env: map[string]string{EnvCUDAVisible: "4,5", EnvLocalRank: "1", EnvLocalWorldSize: "1"}, err: "LOCAL_RANK=1 is out of range"},
		{env: map[string]string{EnvCUDAVisible: "2,3"}, device: "cuda:0", visible: "2", timeout: DefaultGPUTimeout},
		{env: map[string]string{EnvCUDAVisible: "0", EnvUseCPU: "yes"}, device: "cpu"},
		{env: map[string]string{EnvCUDAVisible: "0"}, cpu: ptr(true), device: "cpu"},
		{env: map[string]string{EnvCUDAVisible: "0", EnvUseCPU: "1"}, cpu: ptr(false), device: "cuda:0", visible: "0", timeout: DefaultGPUTimeout},
		{env: map[string]string{}, cpu: ptr(false), err: "WithCPU(false) but no GPU is visible"},
	}
	for i, c := range cases {
		fresh(t)
		opts := []Option{withEnv(envMap(c.env)), withGPUs(c.gpus)}
		if c.cpu != nil {
			opts = append(opts, WithCPU(*c.cpu))
		}
		a, err := NewAccelerator(opts...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("case %d: err = %v, want %q", i, err, c.err)
			}
			continue
		}
		if c.timeout == 0 {
			c.timeout = DefaultCPUTimeout
		}
		if err != nil || a.Device() != c.device || a.VisibleDevice() != c.visible || a.Timeout() != c.timeout || a.UseCPU() != (c.device == "cpu") {
			t.Errorf("case %d: %v (visible %q, timeout %v), %v; want %s/%q/%v", i, a, a.VisibleDevice(), a.Timeout(), err, c.device, c.visible, c.timeout)
		}
	}
	// Local rank → device, modulo the visible count (Accelerate's set_device).
	for local, want := range []string{"cuda:0/6", "cuda:1/GPU-x", "cuda:0/6", "cuda:1/GPU-x"} {
		d, v := gpuDevice(local, []string{"6", "GPU-x"})
		if d+"/"+v != want {
			t.Errorf("local rank %d: %s/%s, want %s", local, d, v, want)
		}
	}
	fresh(t)
	if _, err := NewAccelerator(withEnv(envMap(nil)), WithTimeout(-time.Second)); err == nil {
		t.Error("negative timeout accepted")
	}
	a, err := NewAccelerator(withEnv(envMap(nil)), WithTimeout(time.Minute))
	if err != nil || a.Timeout() != time.Minute {
		t.Errorf("WithTimeout: %v %v", a, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestBadEnvIsAnError(t *testing.T) {
	fresh(t)
	_, err := NewAccelerator(withEnv(envMap(map[string]string{EnvWorldSize: "2"})))
	if err == nil || !strings.Contains(err.Error(), "RANK is not set") {
		t.Fatalf("err = %v", err)
	}
	if StateInitialized() {
		t.Fatal("state left behind")
	}
}

func TestJoinFailureNamesRank(t *testing.T) {
	fresh(t)
	st, err := pg.NewStore("127.0.0.1:0", "sec")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.Serve(ctx)
	_, err = NewAccelerator(WithTimeout(400*time.Millisecond), withEnv(envMap(map[string]string{
		EnvWorldSize: "2", EnvRank: "0", EnvRdzvEndpoint: st.Addr(), EnvLaunchSecret: "sec",
	})))
	if err == nil || !strings.Contains(err.Error(), "rank 1 did not join within 400ms") {
		t.Fatalf("err = %v", err)
	}
}

// accelerators builds n Accelerators over a real in-process group (the
// process-wide registry is bypassed: one process cannot hold n states).
func accelerators(t *testing.T, n int) []*Accelerator {
	t.Helper()
	st, err := pg.NewStore("127.0.0.1:0", "sec")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); st.Serve(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	accs := make([]*Accelerator, n)
	errs := make([]error, n)
	var jw sync.WaitGroup
	for r := range accs {
		jw.Add(1)
		go func() {
			defer jw.Done()
			g, err := pg.Join(context.Background(), pg.Config{Rank: r, WorldSize: n, StoreAddr: st.Addr(), Secret: "sec", Timeout: patience})
			errs[r] = err
			accs[r] = &Accelerator{st: &processState{
				env:    launchEnv{rank: r, localRank: r, worldSize: n, localWorldSize: n},
				device: "cpu", cpu: true, mixedPrecision: "no", timeout: patience,
				ctx: context.Background(), out: &bytes.Buffer{}, group: g,
			}}
		}()
	}
	jw.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, a := range accs {
			a.Close()
		}
	})
	return accs
}

func each(accs []*Accelerator, f func(a *Accelerator) error) error {
	errs := make([]error, len(accs))
	var wg sync.WaitGroup
	for i, a := range accs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(a) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type metrics struct {
	Rank int
	Loss float64
	Tags []string
}

func TestCollectivesAcrossRanks(t *testing.T) {
	accs := accelerators(t, 3)
	err := each(accs, func(a *Accelerator) error {
		r := a.ProcessIndex()
		if a.DistributedType() != "MULTI_CPU" {
			return fmt.Errorf("distributed type %s", a.DistributedType())
		}
		vals := make([]float64, r+1) // lengths differ
		for i := range vals {
			vals[i] = float64(10*r + i)
		}
		g, err := a.GatherFloat64s(vals)
		if err != nil {
			return err
		}
		if fmt.Sprint(g) != "[0 10 11 20 21 22]" {
			return fmt.Errorf("GatherFloat64s = %v", g)
		}
		g32, err := a.GatherFloat32s([]float32{float32(r) + 0.5})
		if err != nil || fmt.Sprint(g32) != "[0.5 1.5 2.5]" {
			return fmt.Errorf("GatherFloat32s = %v, %v", g32, err)
		}
		objs, err := a.GatherObject(map[string]any{"rank": r})
		if err != nil || fmt.Sprint(objs) != "[map[rank:0] map[rank:1] map[rank:2]]" {
			return fmt.Errorf("GatherObject = %v, %v", objs, err)
		}
		var ms []metrics
		if err := a.GatherObjectInto(metrics{Rank: r, Loss: float64(r) / 4, Tags: []string{fmt.Sprint("r", r)}}, &ms); err != nil {
			return err
		}
		if len(ms) != 3 || ms[2].Rank != 2 || ms[1].Loss != 0.25 || ms[0].Tags[0] != "r0" {
			return fmt.Errorf("GatherObjectInto = %+v", ms)
		}
		mean, err := a.Reduce([]float64{float64(r), 1}, "mean")
		if err != nil || fmt.Sprint(mean) != "[1 1]" {
			return fmt.Errorf("Reduce mean = %v, %v", mean, err)
		}
		mx, err := a.ReduceFloat32s([]float32{float32(r)}, "max")
		if err != nil || mx[0] != 2 {
			return fmt.Errorf("Reduce max = %v, %v", mx, err)
		}
		buf := []float64{float64(r)}
		if err := a.AllReduceFloat64(buf, "sum"); err != nil || buf[0] != 3 {
			return fmt.Errorf("AllReduceFloat64 = %v, %v", buf, err)
		}
		b32 := []float32{float32(r)}
		if err := a.BroadcastFloat32s(b32, 2); err != nil || b32[0] != 2 {
			return fmt.Errorf("BroadcastFloat32s = %v, %v", b32, err)
		}
		b64 := []float64{float64(r)}
		if err := a.BroadcastFloat64s(b64, 1); err != nil || b64[0] != 1 {
			return fmt.Errorf("BroadcastFloat64s = %v, %v", b64, err)
		}
		cfg := metrics{}
		if r == 0 {
			cfg = metrics{Rank: 99, Tags: []string{"x"}}
		}
		if err := a.BroadcastObject(&cfg, 0); err != nil || cfg.Rank != 99 || cfg.Tags[0] != "x" {
			return fmt.Errorf("BroadcastObject = %+v, %v", cfg, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMainProcessFirstOrdering(t *testing.T) {
	accs := accelerators(t, 3)
	var mu sync.Mutex
	var order []int
	err := each(accs, func(a *Accelerator) error {
		if a.ProcessIndex() != 0 {
			time.Sleep(10 * time.Millisecond) // give the others a head start
		} else {
			time.Sleep(100 * time.Millisecond)
		}
		return a.MainProcessFirst(func() {
			mu.Lock()
			order = append(order, a.ProcessIndex())
			mu.Unlock()
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != 0 {
		t.Fatalf("order = %v, want the main process first", order)
	}
	// Print: only the local main process writes.
	for _, a := range accs {
		a.Print("x")
	}
	for i, a := range accs {
		got := a.st.out.(*bytes.Buffer).String()
		if (i == 0) != (got == "x\n") {
			t.Fatalf("rank %d printed %q", i, got)
		}
	}
	// After EndTraining on one rank, its collectives fail clearly and the
	// others see it leave.
	if err := accs[2].EndTraining(); err != nil {
		t.Fatal(err)
	}
	if err := accs[2].WaitForEveryone(); err == nil || !strings.Contains(err.Error(), "process group was destroyed") {
		t.Fatalf("after EndTraining: %v", err)
	}
	err = each(accs[:2], func(a *Accelerator) error { return a.WaitForEveryone() })
	if err == nil || !strings.Contains(err.Error(), "rank 2 closed its connection during barrier") {
		t.Fatalf("barrier without rank 2: %v", err)
	}
}

// FSDP is on with a plugin or ACCELERATE_USE_FSDP=true, its unset fields
// from the FSDP_* environment; a bad value is refused before any state
// exists.
func TestFSDPPlugin(t *testing.T) {
	defer ResetState()
	a, err := NewAccelerator(withEnv(envMap(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if a.FSDPPlugin() != nil || a.DistributedType() != "NO" {
		t.Errorf("without FSDP: %v %s", a.FSDPPlugin(), a.DistributedType())
	}
	ResetState()
	a, err = NewAccelerator(withEnv(envMap(map[string]string{"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "shard_grad_op"})))
	if err != nil {
		t.Fatal(err)
	}
	if p := a.FSDPPlugin(); p == nil || p.ShardingStrategy != fsdp.ShardGradOp || a.DistributedType() != "FSDP" {
		t.Errorf("ACCELERATE_USE_FSDP: %v %s", p, a.DistributedType())
	}
	ResetState()
	a, err = NewAccelerator(withEnv(envMap(map[string]string{"FSDP_STATE_DICT_TYPE": "SHARDED_STATE_DICT"})),
		WithFSDPPlugin(fsdp.Plugin{ShardingStrategy: fsdp.NoShard}))
	if err != nil {
		t.Fatal(err)
	}
	if p := a.FSDPPlugin(); p == nil || p.ShardingStrategy != fsdp.NoShard || p.StateDictType != fsdp.ShardedStateDict {
		t.Errorf("WithFSDPPlugin: %v", p)
	}
	ResetState()
	for env, want := range map[string]string{
		"FSDP_SHARDING_STRATEGY": `accelerate: fsdp: unknown sharding strategy "ZERO9"`,
		"ACCELERATE_USE_FSDP":    `accelerate: fsdp: ACCELERATE_USE_FSDP="ZERO9": invalid truth value`,
	} {
		m := map[string]string{"ACCELERATE_USE_FSDP": "1", env: "ZERO9"}
		if _, err := NewAccelerator(withEnv(envMap(m))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=ZERO9: %v, want %q", env, err, want)
		}
		if StateInitialized() {
			t.Errorf("%s=ZERO9 left state behind", env)
		}
	}
	// HYBRID_SHARD needs two nodes: refused in one process (one node).
	_, err = NewAccelerator(withEnv(envMap(nil)), WithFSDPPlugin(fsdp.Plugin{ShardingStrategy: fsdp.HybridShard}))
	if err == nil || !strings.Contains(err.Error(), "HYBRID_SHARD shards inside each node") {
		t.Errorf("HYBRID_SHARD on one node: %v", err)
	}
	if StateInitialized() {
		t.Error("HYBRID_SHARD on one node left state behind (the kernel would refuse to launch)")
	}
}
