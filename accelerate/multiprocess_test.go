package accelerate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerate/pg"
)

const envTestWorker = "GOACCEL_ACCELERATE_TEST_WORKER"

// patience bounds what must not time out in these tests (a join, a
// collective, a worker process): a hang guard far above what a cold, busy
// machine needs, never a budget.
const patience = 10 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv(envTestWorker) == "1" {
		if err := workerMain(); err != nil {
			fmt.Println("worker:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workerMain is what a launched worker's cell does, with the real
// environment.
func workerMain() error {
	if StateInitialized() {
		return fmt.Errorf("state initialized before NewAccelerator")
	}
	a, err := NewAccelerator()
	if err != nil {
		return err
	}
	r := a.ProcessIndex()
	if a.NumProcesses() != 2 || a.LocalProcessIndex() != r || a.Device() != "cuda:"+strconv.Itoa(r) ||
		a.MixedPrecision() != "bf16" || a.DistributedType() != "MULTI_GPU" || a.Timeout() != DefaultGPUTimeout || !StateInitialized() {
		return fmt.Errorf("state: %v timeout %v", a, a.Timeout())
	}
	var order []string
	if err := a.MainProcessFirst(func() { order = append(order, "body") }); err != nil {
		return err
	}
	objs, err := a.GatherObject(fmt.Sprint("rank", r))
	if err != nil || fmt.Sprint(objs) != "[rank0 rank1]" {
		return fmt.Errorf("GatherObject = %v, %v", objs, err)
	}
	big := make([]float32, 1<<20+3)
	for i := range big {
		big[i] = float32(r + 1)
	}
	if err := a.AllReduceFloat32(big, "mean"); err != nil || big[0] != 1.5 || big[len(big)-1] != 1.5 {
		return fmt.Errorf("AllReduceFloat32 mean = %v, %v", big[0], err)
	}
	start, end := a.SplitBetweenProcesses(5)
	shares, err := a.GatherObject([]int{start, end})
	if err != nil || fmt.Sprint(shares) != "[[0 3] [3 5]]" {
		return fmt.Errorf("split shares = %v, %v", shares, err)
	}
	return a.EndTraining()
}

func TestMultiProcessWorkers(t *testing.T) {
	const secret = "multi-process-secret"
	st, err := pg.NewStore("127.0.0.1:0", secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); st.Serve(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	outs := make([]bytes.Buffer, 2)
	cmds := make([]*exec.Cmd, 2)
	for r := range cmds {
		c := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), envTestWorker+"=1",
			EnvWorldSize+"=2", EnvRank+"="+strconv.Itoa(r), EnvLocalRank+"="+strconv.Itoa(r), EnvLocalWorldSize+"=2",
			EnvNodeRank+"=0", EnvGroupRank+"=0", EnvMasterAddr+"=127.0.0.1", EnvMasterPort+"="+strconv.Itoa(st.Port()),
			EnvMixedPrecision+"=bf16", EnvCUDAVisible+"=0,1", EnvLaunchSecret+"="+secret,
			EnvRestartCount+"=0", EnvMaxRestarts+"=0", EnvUseCPU+"=")
		c.Stdout, c.Stderr = &outs[r], &outs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	for r, c := range cmds {
		err := c.Wait()
		if out := strings.TrimSpace(outs[r].String()); err != nil || out != "ok" {
			t.Errorf("worker %d: %v: %s", r, err, out)
		}
	}
}
