package pg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Worker mode: the test binary re-executes itself with these variables set
// and runs workerMain instead of the tests.
const (
	envWorker = "GOACCEL_PG_TEST_WORKER"
	envRank   = "GOACCEL_PG_TEST_RANK"
	envWorld  = "GOACCEL_PG_TEST_WORLD"
	envStore  = "GOACCEL_PG_TEST_STORE"
	envMode   = "GOACCEL_PG_TEST_MODE"
)

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) == "1" {
		os.Exit(workerMain())
	}
	os.Exit(m.Run())
}

func workerMain() int {
	rank, _ := strconv.Atoi(os.Getenv(envRank))
	world, _ := strconv.Atoi(os.Getenv(envWorld))
	g, err := Join(context.Background(), Config{Rank: rank, WorldSize: world, StoreAddr: os.Getenv(envStore), Secret: testSecret, Timeout: patience, Logger: quietLogger()})
	if err != nil {
		fmt.Println("join:", err)
		return 1
	}
	defer g.Close()
	if os.Getenv(envMode) == "die" && rank == 1 {
		os.Exit(3) // dies without closing anything: the kernel closes its sockets
	}
	const n = 3<<20 + 5 // ~12 MiB of float32, not divisible by the world size
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = float32(i%1000 + rank)
	}
	if err := g.AllReduceFloat32(context.Background(), buf, Sum); err != nil {
		fmt.Println("all_reduce:", err)
		return 2
	}
	for i, v := range buf {
		want := float32(world*(i%1000) + world*(world-1)/2)
		if v != want {
			fmt.Printf("all_reduce: [%d] = %v, want %v\n", i, v, want)
			return 2
		}
	}
	if err := g.Barrier(context.Background()); err != nil {
		fmt.Println("barrier:", err)
		return 2
	}
	fmt.Println("ok")
	return 0
}

func runWorkers(t *testing.T, world int, mode string) ([]string, []error) {
	t.Helper()
	st := startStore(t, testSecret)
	cmds := make([]*exec.Cmd, world)
	outs := make([]*bytes.Buffer, world)
	for r := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"=1", envRank+"="+strconv.Itoa(r), envWorld+"="+strconv.Itoa(world), envStore+"="+st.Addr(), envMode+"="+mode)
		outs[r] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	errs := make([]error, world)
	res := make([]string, world)
	for r, c := range cmds {
		errs[r] = c.Wait()
		res[r] = strings.TrimSpace(outs[r].String())
	}
	return res, errs
}

func TestMultiProcessAllReduce(t *testing.T) {
	out, errs := runWorkers(t, 2, "")
	for r := range out {
		if errs[r] != nil || out[r] != "ok" {
			t.Fatalf("worker %d: %v: %s", r, errs[r], out[r])
		}
	}
}

func TestMultiProcessDeadRank(t *testing.T) {
	out, errs := runWorkers(t, 2, "die")
	if errs[1] == nil {
		t.Fatalf("worker 1 was supposed to die: %s", out[1])
	}
	if errs[0] == nil || out[0] != "all_reduce: pg: rank 1 closed its connection during all_reduce" {
		t.Fatalf("worker 0: %v: %q", errs[0], out[0])
	}
}
