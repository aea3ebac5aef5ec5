//go:build linux

package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
)

func TestDecisionTreeErrorsWordForWord(t *testing.T) {
	defer launcher.FakeGPUs()()
	cases := []struct {
		name string
		o    launcher.Options
		want string
	}{
		{"no processes and no GPU", launcher.Options{},
			"You have to specify the number of devices you would like to use, add `num_processes=...` to your call."},
		{"node rank", launcher.Options{NumProcesses: 2, NodeRank: 1},
			"The node_rank must be less than the number of nodes."},
		{"node rank equal", launcher.Options{NumProcesses: 2, NodeRank: 2, NumNodes: 2},
			"The node_rank must be less than the number of nodes."},
		{"mixed precision", launcher.Options{NumProcesses: 2, MixedPrecision: "fp32"},
			"Unknown mixed_precision mode: fp32. Choose between ['no', 'fp8', 'fp16', 'bf16']"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub, _, err := run(t, context.Background(), add, []any{1, 2}, c.o)
			if errText(err) != c.want {
				t.Fatalf("error:\n got %q\nwant %q", errText(err), c.want)
			}
			if len(pub.Events()) != 0 {
				t.Errorf("something was printed before the error: %+v", pub.Events())
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	defer launcher.FakeGPUs()()
	cases := []struct {
		o    launcher.Options
		want string
	}{
		{launcher.Options{NumProcesses: -1}, "NumProcesses must not be negative"},
		{launcher.Options{NumProcesses: 2, RdzvBackend: "zookeeper"}, `unknown RdzvBackend "zookeeper"; choose between 'static', 'c10d' and 'etcd'`},
		{launcher.Options{NumProcesses: 2, RdzvBackend: "c10d"}, "needs RdzvEndpoint"},
		{launcher.Options{NumProcesses: 2, UsePort: "http"}, `UsePort "http" is not a port number`},
		{launcher.Options{NumProcesses: 2, MaxRestarts: -1}, "MaxRestarts must not be negative"},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, UsePort: "0"}, `UsePort "0" (pick a free port) works on one node only`},
	}
	for _, c := range cases {
		_, _, err := run(t, context.Background(), add, []any{1, 2}, c.o)
		if !strings.Contains(errText(err), c.want) {
			t.Errorf("%+v: error %q does not contain %q", c.o, errText(err), c.want)
		}
	}
}

func TestOneProcessRunsInKernel(t *testing.T) {
	defer launcher.FakeGPUs()()
	pub, res, err := run(t, context.Background(), add, []any{2, 3}, launcher.Options{NumProcesses: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := pub.Text("stdout"); got != "Launching training on CPU.\n" {
		t.Errorf("stdout %q", got)
	}
	if len(res) != 1 || len(res[0]) != 1 || res[0][0] != 5 {
		t.Errorf("results %v, want [[5]]", res)
	}

	restore := launcher.FakeGPUs("GPU-a")
	defer restore()
	// A float argument to a float32 parameter and a closure (not
	// registered with any session) both work in process.
	scale := func(x float32) float32 { return 2 * x }
	pub, res, err = run(t, context.Background(), scale, []any{0.5}, launcher.Options{NumProcesses: 1, MixedPrecision: "BF16"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pub.Text("stdout"); got != "Launching training on one GPU.\n" {
		t.Errorf("stdout %q", got)
	}
	if res[0][0] != float32(1) {
		t.Errorf("results %v", res)
	}
}

func TestOneProcessErrors(t *testing.T) {
	defer launcher.FakeGPUs()()
	o := launcher.Options{NumProcesses: 1}
	_, _, err := run(t, context.Background(), add, []any{1}, o)
	containsAll(t, "arity error", errText(err), "takes 2 argument(s), got 1")
	_, _, err = run(t, context.Background(), add, []any{1, "x"}, o)
	containsAll(t, "type error", errText(err), "argument 2", "a string cannot be used as a int")
	_, _, err = run(t, context.Background(), add, []any{1, 2.5}, o)
	containsAll(t, "lossy conversion", errText(err), "2.5 (float64) does not fit in a int")
	_, _, err = run(t, context.Background(), 42, nil, o)
	containsAll(t, "not a func", errText(err), "is a int, not a function")

	_, _, err = run(t, context.Background(), func() { panic("in kernel") }, nil, o)
	var pe *launcher.PanicError
	if !errors.As(err, &pe) || pe.Value != "in kernel" {
		t.Errorf("panic error %v", errText(err))
	}
	mp := ""
	_, res, err := run(t, context.Background(), func() (int, error) {
		mp = os.Getenv("ACCELERATE_MIXED_PRECISION")
		return 7, errors.New("bad step")
	}, nil, launcher.Options{NumProcesses: 1, MixedPrecision: "FP16"})
	containsAll(t, "function error", errText(err), "bad step")
	if len(res) != 1 || res[0][0] != 7 {
		t.Errorf("results alongside the error: %v", res)
	}
	if mp != "fp16" {
		t.Errorf("ACCELERATE_MIXED_PRECISION inside the call = %q, want fp16", mp)
	}
}

func TestGuardsRefuseMultiProcess(t *testing.T) {
	defer launcher.FakeGPUs()()
	for _, st := range [][2]bool{{true, false}, {false, true}} {
		restore := launcher.FakeKernelState(st[0], st[1])
		pub, _, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2})
		restore()
		want := "To launch a multi-device training from your notebook, the `Accelerator` should only be initialized inside your training function. Restart your notebook and make sure no cells initializes an `Accelerator`."
		if errText(err) != want || !errors.Is(err, launcher.ErrAcceleratorInitialized) {
			t.Errorf("state %v: error %q", st, errText(err))
		}
		if strings.Contains(pub.Text("stdout"), "ran") {
			t.Errorf("the function ran")
		}
	}
	// One process is still allowed (it runs in the kernel anyway).
	defer launcher.FakeKernelState(true, true)()
	if _, _, err := run(t, context.Background(), add, []any{1, 1}, launcher.Options{NumProcesses: 1}); err != nil {
		t.Errorf("one process refused: %v", err)
	}
}

func TestMoreProcessesThanGPUs(t *testing.T) {
	defer launcher.FakeGPUs("GPU-a", "GPU-b")()
	_, _, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 3})
	containsAll(t, "error", errText(err), "NumProcesses is 3 but only 2 GPU(s) are visible")
}

func envsByRank(t *testing.T, res [][]any) []map[string]string {
	t.Helper()
	out := make([]map[string]string, len(res))
	for i, r := range res {
		m, ok := r[0].(map[string]string)
		if !ok {
			t.Fatalf("rank %d result %T", i, r[0])
		}
		out[i] = m
	}
	return out
}

func TestEnvironmentPerRankCPU(t *testing.T) {
	defer launcher.FakeGPUs()()
	pub, res, err := run(t, context.Background(), workerEnv, nil, launcher.Options{
		NumProcesses: 3, UsePort: "0", MixedPrecision: "FP16", RdzvID: "job7", MaxRestarts: 0,
		Env: map[string]string{"EXTRA": "x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pub.Text("stdout"); got != "Launching training on 3 CPUs.\n" {
		t.Errorf("stdout %q", got)
	}
	envs := envsByRank(t, res)
	if len(envs) != 3 {
		t.Fatalf("%d results", len(envs))
	}
	secret := envs[0][launcher.EnvLaunchSecret]
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(secret) {
		t.Errorf("secret %q", secret)
	}
	port := envs[0]["MASTER_PORT"]
	if p, _ := strconv.Atoi(port); p <= 0 {
		t.Errorf("UsePort \"0\" gave MASTER_PORT %q", port)
	}
	for r, e := range envs {
		want := map[string]string{
			"RANK": strconv.Itoa(r), "LOCAL_RANK": strconv.Itoa(r), "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3",
			"NODE_RANK": "0", "GROUP_RANK": "0", "ROLE_RANK": strconv.Itoa(r), "ROLE_NAME": "default",
			"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "ACCELERATE_MIXED_PRECISION": "fp16",
			"TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "job7",
			launcher.EnvLaunchSecret: secret, launcher.EnvRdzvBackend: "static",
			launcher.EnvRdzvEndpoint: "127.0.0.1:" + port, launcher.EnvRdzvConf: `{"rank":"0"}`, "EXTRA": "x",
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("rank %d: %s=%q, want %q", r, k, e[k], v)
			}
		}
		if _, ok := e["CUDA_VISIBLE_DEVICES"]; ok {
			t.Errorf("rank %d: CUDA_VISIBLE_DEVICES set in CPU mode", r)
		}
		if _, set := os.LookupEnv("GOMAXPROCS"); !set {
			if want := strconv.Itoa(max(1, runtime.NumCPU()/3)); e["GOMAXPROCS"] != want {
				t.Errorf("rank %d: GOMAXPROCS=%q, want %s (its share of the cores)", r, e["GOMAXPROCS"], want)
			}
		}
	}
}

func TestEnvironmentGPUAndMultiNode(t *testing.T) {
	defer launcher.FakeGPUs("GPU-aaa", "GPU-bbb")()
	// NumProcesses 0: one worker per GPU, on both nodes (the agent, on
	// the same host, sees the same fake GPUs and takes the launch's count).
	port := freePort(t)
	conf := map[string]string{"secret_file": secretFile(t)}
	agentInProcess(t, launcher.NodeOptions{RdzvBackend: "static", RdzvEndpoint: "127.0.0.1:" + port, RdzvID: "envs", RdzvConf: conf, NodeRank: 1})
	pub, res, err := run(t, context.Background(), workerEnv, nil, launcher.Options{
		NumNodes: 2, MasterAddr: "127.0.0.1", UsePort: port, RdzvID: "envs", RdzvConf: conf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pub.Text("stdout"); got != "Launching training on 2 GPUs on node 0 of 2.\n" {
		t.Errorf("stdout %q", got)
	}
	envs := envsByRank(t, res)
	if len(envs) != 4 {
		t.Fatalf("%d results", len(envs))
	}
	secret := envs[0][launcher.EnvLaunchSecret]
	for r, e := range envs {
		node, l := r/2, r%2
		want := map[string]string{
			"RANK": strconv.Itoa(r), "LOCAL_RANK": strconv.Itoa(l), "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
			"NODE_RANK": strconv.Itoa(node), "GROUP_RANK": strconv.Itoa(node), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
			"CUDA_VISIBLE_DEVICES": []string{"GPU-aaa", "GPU-bbb"}[l], launcher.EnvLaunchSecret: secret,
			launcher.EnvRdzvConf: fmt.Sprintf(`{"rank":"%d","secret_file":%q}`, node, conf["secret_file"]),
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("rank %d: %s=%q, want %q", r, k, e[k], v)
			}
		}
		if _, ok := e["ACCELERATE_USE_CPU"]; ok {
			t.Errorf("ACCELERATE_USE_CPU set in GPU mode")
		}
	}
	if secret != "a secret every node of the test shares" {
		t.Errorf("across nodes with static, the launch secret is the shared secret_file's; got %q", secret)
	}
}

func TestOutputPrefixes(t *testing.T) {
	defer launcher.FakeGPUs()()
	pub, res, err := run(t, context.Background(), echo, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0][0] != 0 || res[1][0] != 1 {
		t.Errorf("results %v", res)
	}
	out := pub.Text("stdout")
	for r := 0; r < 2; r++ {
		p := "[rank " + strconv.Itoa(r) + "] "
		containsAll(t, "stdout", out,
			p+"hello from "+strconv.Itoa(r)+"\n",
			p+"progress 50%\r"+p+"progress 100%\n",
			p+"two\n"+p+"lines\n",
			p+"partial")
		containsAll(t, "stderr", pub.Text("stderr"), p+"warning from "+strconv.Itoa(r)+"\n")
	}

	pub, _, err = run(t, context.Background(), echo, nil, launcher.Options{
		NumProcesses: 2, UsePort: "0", LogLinePrefixTemplate: "${role_name}/${local_rank}|${rank}: ",
	})
	if err != nil {
		t.Fatal(err)
	}
	containsAll(t, "custom prefix", pub.Text("stdout"), "default/0|0: hello from 0\n", "default/1|1: hello from 1\n")
	if got := launcher.ExpandPrefix("${rank}${x}$rank${node_rank}", 3, 1, 2); got != "3${x}$rank2" {
		t.Errorf("unknown placeholders changed: %q", got)
	}
}

func TestDisplayForwarding(t *testing.T) {
	defer launcher.FakeGPUs()()
	pub, res, err := run(t, context.Background(), showDisplays, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		id := res[r][0].(string)
		var shown, updated bool
		for _, e := range pub.Events() {
			if e.ID != id {
				continue
			}
			switch {
			case e.Kind == "display" && e.Data["text/html"] == "<b>rank "+strconv.Itoa(r)+"</b>":
				shown = true
			case e.Kind == "update" && e.Data["text/html"] == "<b>rank "+strconv.Itoa(r)+" done</b>" && shown:
				updated = true
			}
		}
		if !shown || !updated {
			t.Errorf("rank %d: display %v, update %v; events %+v", r, shown, updated, pub.Events())
		}
	}
	clears := 0
	for _, e := range pub.Events() {
		if e.Kind == "clear" && e.Wait {
			clears++
		}
	}
	if clears != 1 {
		t.Errorf("%d clear_output(wait) events, want 1", clears)
	}
}

func TestRankPanicStopsOthers(t *testing.T) {
	defer launcher.FakeGPUs()()
	monitor := 100 * time.Millisecond
	start := time.Now()
	pub, _, err := run(t, context.Background(), panicky, nil, launcher.Options{NumProcesses: 3, UsePort: "0", MonitorInterval: monitor})
	end := time.Now()
	cf := asChildFailed(t, err)
	if cf.Rank != 1 || cf.Panic != "boom on purpose" || cf.ExitCode != 1 {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", err.Error(), "rank 1", "exit status 1", "panic: boom on purpose", "launchertest")
	m := regexp.MustCompile(`failing-at=(\d+)`).FindStringSubmatch(pub.Text("stdout"))
	if m == nil {
		t.Fatalf("no failing-at line: %q", pub.Text("stdout"))
	}
	ns, _ := strconv.ParseInt(m[1], 10, 64)
	stopped := end.Sub(time.Unix(0, ns))
	t.Logf("other ranks stopped %s after rank 1 panicked (MonitorInterval %s; whole launch %s)", stopped, monitor, end.Sub(start))
	// The other ranks sleep forever: the launch returned, so they were
	// stopped; prompt tells "at once" from that however busy the machine.
	if stopped > prompt {
		t.Errorf("the other ranks took %s to stop after the panic, want at most %s", stopped, prompt)
	}
	for _, pid := range pids(pub.Text("stdout")) {
		assertGone(t, pid)
	}
}

func TestUnrecoveredGoroutinePanic(t *testing.T) {
	defer launcher.FakeGPUs()()
	_, _, err := run(t, context.Background(), goroutinePanic, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	cf := asChildFailed(t, err)
	if cf.Rank != 1 || cf.ExitCode != 2 || cf.Panic != "crash in goroutine" {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", err.Error(), "rank 1", "exit status 2", "panic: crash in goroutine", "last lines of rank 1's stderr")
}

func TestExitCodeNonZero(t *testing.T) {
	defer launcher.FakeGPUs()()
	_, _, err := run(t, context.Background(), exit3, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	cf := asChildFailed(t, err)
	if cf.Rank != 0 || cf.ExitCode != 3 || cf.Panic != "" {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", err.Error(), "rank 0 (local rank 0) failed (exit status 3)", "about to exit with 3")
}

func TestMaxRestarts(t *testing.T) {
	defer launcher.FakeGPUs()()
	pub, res, err := run(t, context.Background(), flaky, nil, launcher.Options{NumProcesses: 2, UsePort: "0", MaxRestarts: 2})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		if res[r][0] != 2 {
			t.Errorf("rank %d saw restart count %v, want 2", r, res[r][0])
		}
	}
	containsAll(t, "stderr", pub.Text("stderr"),
		"launcher: rank 1 failed (exit status 1); restarting all 2 workers (restart 1 of 2)\n",
		"(restart 2 of 2)")

	_, _, err = run(t, context.Background(), flaky, nil, launcher.Options{NumProcesses: 2, UsePort: "0", MaxRestarts: 1})
	cf := asChildFailed(t, err)
	if cf.Rank != 1 || cf.Restarts != 1 || cf.Message != "flaky failure at restart 1" {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", err.Error(), "after 1 restart(s) of the group: flaky failure at restart 1")
}

func TestPortBusy(t *testing.T) {
	defer launcher.FakeGPUs()()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, _, err = run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2, UsePort: port})
	if !errors.Is(err, pg.ErrPortInUse) {
		t.Errorf("error does not match pg.ErrPortInUse: %v", errText(err))
	}
	containsAll(t, "error", errText(err), "port "+port+" is already in use", `UsePort "0"`)
}

func TestNoSession(t *testing.T) {
	defer launcher.FakeGPUs()()
	restore := launcher.SetSession(nil)
	_, _, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	restore()
	containsAll(t, "error", errText(err), "no notebook session is installed")
	_, _, err = run(t, context.Background(), func() {}, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	containsAll(t, "error", errText(err), "preparing the function for the workers", "not registered")
}

func TestDebugPreflight(t *testing.T) {
	defer launcher.FakeGPUs()()
	t.Setenv("ACCELERATE_DEBUG_MODE", "Yes")
	t.Setenv(launchertest.EnvPreflightFailRank, "1")
	pub, _, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	const prefix = "An issue was found when verifying a stable environment for the notebook launcher. The following error was raised: "
	if !strings.HasPrefix(errText(err), prefix) {
		t.Fatalf("error %q", errText(err))
	}
	containsAll(t, "error", errText(err), "rank 1", "pre-flight check failed on purpose")
	var pf *launcher.PreflightError
	if !errors.As(err, &pf) {
		t.Errorf("not a *PreflightError")
	}
	if strings.Contains(pub.Text("stdout"), "ran") || strings.Contains(pub.Text("stdout"), "Launching") {
		t.Errorf("the function ran after a failed pre-flight: %q", pub.Text("stdout"))
	}

	// A passing pre-flight (the workers really join the process group
	// through the launcher's store), then the real run.
	for _, v := range []string{"1", "TRUE"} {
		t.Setenv("ACCELERATE_DEBUG_MODE", v)
		t.Setenv(launchertest.EnvPreflightFailRank, "")
		pub, res, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
		if err != nil || len(res) != 2 {
			t.Fatalf("ACCELERATE_DEBUG_MODE=%s: %v %v", v, err, res)
		}
		containsAll(t, "stdout", pub.Text("stdout"), "Launching training on 2 CPUs.\n", "[rank 0] ran\n", "[rank 1] ran\n")
	}
}

func TestC10dRendezvousPreflight(t *testing.T) {
	defer launcher.FakeGPUs()()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := ln.Addr().String()
	ln.Close() // free again: a worker will host the store there
	t.Setenv("ACCELERATE_DEBUG_MODE", "true")
	_, res, err := run(t, context.Background(), workerEnv, nil, launcher.Options{
		NumProcesses: 3, RdzvBackend: "C10D", RdzvEndpoint: endpoint,
		RdzvConf: map[string]string{"join_timeout": "20"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, e := range envsByRank(t, res) {
		if e[launcher.EnvRdzvBackend] != "c10d" || e[launcher.EnvRdzvEndpoint] != endpoint || e[launcher.EnvRdzvConf] != `{"join_timeout":"20"}` {
			t.Errorf("rank %d: %v", r, e)
		}
	}
}

// With no publisher installed by SetCell, worker output goes to the
// process's stdout (which the kernel redirects into the cell) and worker
// displays through the display package's sink.
func TestFallbackToStdoutAndDisplaySink(t *testing.T) {
	defer launcher.FakeGPUs()()
	sink := &launchertest.Publisher{}
	defer display.SetSink(sink)()
	defer launcher.SetCell(context.Background(), nil)()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldStdout := os.Stdout
	os.Stdout = w
	captured := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); captured <- string(b) }()
	res, err := launcher.NotebookLauncher(showDisplays, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	os.Stdout = oldStdout
	w.Close()
	out := <-captured
	if err != nil {
		t.Fatal(err)
	}
	if out != "Launching training on 2 CPUs.\n" {
		t.Errorf("stdout %q", out)
	}
	var displays, updates int
	for _, e := range sink.Events() {
		switch e.Kind {
		case "display":
			displays++
		case "update":
			updates++
			if e.ID == res[0][0].(string) || e.ID == res[1][0].(string) {
				t.Errorf("update reused the worker's display id instead of display's handle")
			}
		}
	}
	if displays != 2 || updates != 2 {
		t.Errorf("display sink got %d displays and %d updates, want 2 and 2: %+v", displays, updates, sink.Events())
	}
}

func TestParseNvidiaSMI(t *testing.T) {
	gs, err := launcher.ParseSMI("0, GPU-1b2c, NVIDIA H100 80GB HBM3\n1, GPU-3d4e, NVIDIA H100, PCIe\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []launcher.GPU{{Index: 0, UUID: "GPU-1b2c", Name: "NVIDIA H100 80GB HBM3"}, {Index: 1, UUID: "GPU-3d4e", Name: "NVIDIA H100, PCIe"}}
	if len(gs) != 2 || gs[0] != want[0] || gs[1] != want[1] {
		t.Errorf("got %+v", gs)
	}
	if _, err := launcher.ParseSMI("garbage\n"); err == nil {
		t.Error("no error for garbage")
	}
}

// TestWorkerLogsGoToKernelLog: every entry of a worker's standard logger
// reaches the kernel's log; warnings and errors are also shown in the cell
// (on the rank's stderr), debug and info entries are not.
func TestWorkerLogsGoToKernelLog(t *testing.T) {
	defer launcher.FakeGPUs()()
	hook := logtest.NewGlobal()
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	pub, _, err := run(t, context.Background(), logs, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	if err != nil {
		t.Fatal(err)
	}
	stderr := pub.Text("stderr")
	for _, r := range []string{"[rank 0] ", "[rank 1] "} {
		if !strings.Contains(stderr, r) || !strings.Contains(stderr, "internal warning from the worker") {
			t.Errorf("the cell lacks %q's warning: %q", r, stderr)
		}
	}
	if strings.Contains(stderr, "debug entry") {
		t.Errorf("a debug entry reached the cell: %q", stderr)
	}
	ranks := map[any]bool{}
	for _, e := range hook.AllEntries() {
		if e.Message == "internal warning from the worker" && e.Level == logrus.WarnLevel && e.Data["step"] == "3" {
			ranks[e.Data["rank"]] = true
		}
		if strings.Contains(e.Message, "debug entry") {
			t.Errorf("a debug entry was forwarded at level %s", logrus.GetLevel())
		}
	}
	if !ranks[0] || !ranks[1] {
		t.Errorf("forwarded entries by rank: %v (all: %d entries)", ranks, len(hook.AllEntries()))
	}
}

func TestExitZeroWithoutResults(t *testing.T) {
	defer launcher.FakeGPUs()()
	_, _, err := run(t, context.Background(), exit0, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	cf := asChildFailed(t, err)
	if cf.Rank != 1 || cf.ExitCode != 0 {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", err.Error(), "without reporting its results (did the function call os.Exit?)")
}

func TestWorkerStartFailure(t *testing.T) {
	defer launcher.FakeGPUs()()
	defer launcher.SetWorkerCommand(launcher.WorkerCommand{Path: "/nonexistent/goaccel"})()
	_, _, err := run(t, context.Background(), ran, nil, launcher.Options{NumProcesses: 2, UsePort: "0"})
	containsAll(t, "error", errText(err), "starting worker for rank 0 (/nonexistent/goaccel)", "no such file")
}

func TestWorkerMainByHand(t *testing.T) {
	if code := launcher.WorkerMain(context.Background(), reg); code != 2 {
		t.Errorf("WorkerMain outside a launch returned %d, want 2", code)
	}
}
