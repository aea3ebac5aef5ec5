//go:build linux

package launcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
)

// These tests run every node on this host's loopback: the launcher of
// node 0 in the test process, node agents in the test process or in
// re-executed test binaries (which can be killed). e2e/test_multinode.py
// runs the real kernel and agents on separate network namespaces.

// collect is a training function's use of the process group across nodes:
// all-reduce, broadcast, gather and barrier through an Accelerator.
func collect() (map[string]any, error) {
	acc, err := accelerate.NewAccelerator()
	if err != nil {
		return nil, err
	}
	defer acc.EndTraining()
	r := acc.ProcessIndex()
	fmt.Printf("hello from rank %d on node %d\n", r, acc.NodeRank())
	sum := []float64{float64(r)}
	if err := acc.AllReduceFloat64(sum, "sum"); err != nil {
		return nil, err
	}
	b := []float64{0}
	if r == 0 {
		b[0] = 42
	}
	if err := acc.BroadcastFloat64s(b, 0); err != nil {
		return nil, err
	}
	g, err := acc.GatherFloat64s([]float64{float64(r * r)})
	if err != nil {
		return nil, err
	}
	if err := acc.WaitForEveryone(); err != nil {
		return nil, err
	}
	return map[string]any{"rank": r, "node": acc.NodeRank(), "world": acc.NumProcesses(), "sum": sum[0], "bcast": b[0], "gather": g}, nil
}

// sleepUntilRestart sleeps (printing its pid) until the group has been
// restarted `restarts` times, then returns its rank.
func sleepUntilRestart(restarts int) int {
	if n, _ := strconv.Atoi(os.Getenv("TORCHELASTIC_RESTART_COUNT")); n >= restarts {
		return rank()
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	time.Sleep(forever)
	return -1
}

// panicOnRank panics on rank r; the others wait for the group to stop them.
func panicOnRank(r int) int {
	if rank() == r {
		panic(fmt.Sprintf("rank %d gives up", r))
	}
	time.Sleep(forever)
	return 0
}

const agentOptsEnv = "GOACCEL_LAUNCHER_TEST_NODE_OPTIONS"

// fakeAgent is a re-executed test binary playing `goaccel node`.
func fakeAgent() int {
	var o launcher.NodeOptions
	if err := json.Unmarshal([]byte(os.Getenv(agentOptsEnv)), &o); err != nil {
		fmt.Fprintln(os.Stderr, "agent options:", err)
		return 2
	}
	os.Unsetenv(roleEnv)
	exe, _ := os.Executable()
	launcher.SetSession(reg)
	launcher.SetWorkerCommand(launcher.WorkerCommand{Path: exe, Env: []string{launchertest.EnvWorker + "=1"}})
	launcher.FakeGPUs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := launcher.RunNode(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	return 0
}

// agentProcess starts a node agent in a re-executed test binary; its
// output goes to the test log when the test fails.
func agentProcess(t *testing.T, o launcher.NodeOptions) *exec.Cmd {
	t.Helper()
	exe, _ := os.Executable()
	b, _ := json.Marshal(o)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=agent", agentOptsEnv+"="+string(b))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("agent %d output:\n%s", cmd.Process.Pid, out.String())
		}
	})
	return cmd
}

// agentInProcess runs a node agent in this process until the test ends.
func agentInProcess(t *testing.T, o launcher.NodeOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- launcher.RunNode(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunNode: %v", err)
		}
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("a secret every node of the test shares\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// binarySecretFile holds raw random-looking bytes, as `head -c 32
// /dev/urandom` writes: a NUL and bytes that are not UTF-8 among them.
func binarySecretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	raw := []byte{0x9f, 0x00, 0x41, 0xff, 0xfe, 0x0a, 0x80, 0x00, 0x13, 0xc3, 0x28, 0x7f, 0x00, 0xe2, 0x82, 0x01, 0x55, 0xaa, 0x00, 0x10}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// launchAsync runs NotebookLauncherContext with a fresh publisher.
type launched struct {
	res [][]any
	err error
	at  time.Time
}

func launchAsync(ctx context.Context, pub *launchertest.Publisher, fn any, args []any, o launcher.Options) <-chan launched {
	restore := launcher.SetCell(ctx, pub)
	ch := make(chan launched, 1)
	go func() {
		defer restore()
		res, err := launcher.NotebookLauncherContext(ctx, fn, args, o)
		ch <- launched{res, err, time.Now()}
	}()
	return ch
}

// waitLaunch waits for the launch to return (at most patience).
func waitLaunch(t *testing.T, ch <-chan launched) launched {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(patience):
		t.Fatalf("the launch did not return within %s", patience)
	}
	return launched{}
}

// checkCollect checks the results of collect on world ranks.
func checkCollect(t *testing.T, res [][]any, world, perNode int) {
	t.Helper()
	if len(res) != world {
		t.Fatalf("%d results, want %d (one per rank of every node)", len(res), world)
	}
	wantSum := float64(world * (world - 1) / 2)
	for i, r := range res {
		m, ok := r[0].(map[string]any)
		if !ok {
			t.Fatalf("rank %d returned %T", i, r[0])
		}
		g, _ := m["gather"].([]any)
		if m["rank"] != float64(i) || m["node"] != float64(i/perNode) || m["world"] != float64(world) ||
			m["sum"] != wantSum || m["bcast"] != 42.0 || len(g) != world || g[world-1] != float64((world-1)*(world-1)) {
			t.Errorf("result %d: %v (want rank %d, all-reduce sum %v)", i, m, i, wantSum)
		}
	}
}

func TestTwoNodesEtcdEmbeddedWithAgent(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	agentInProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1, NProcPerNode: 2})
	pub := &launchertest.Publisher{}
	r := waitLaunch(t, launchAsync(context.Background(), pub, collect, nil, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkCollect(t, r.res, 4, 2)
	out := pub.Text("stdout")
	containsAll(t, "stdout", out, "Launching training on 2 CPUs on node 0 of 2.\n")
	for rk := 0; rk < 4; rk++ {
		containsAll(t, "stdout", out, fmt.Sprintf("[node %d rank %d] hello from rank %d on node %d\n", rk/2, rk, rk, rk/2))
	}
}

// The store backends across nodes: the agent takes any free node rank and
// its own number of processes; the secret comes from secret_file, a text
// one with static and raw bytes (which no environment variable can hold
// as they are) with c10d.
func TestStaticAndC10dAcrossNodes(t *testing.T) {
	defer launcher.FakeGPUs()()
	for _, backend := range []string{"static", "c10d"} {
		t.Run(backend, func(t *testing.T) {
			port := freePort(t)
			conf := map[string]string{"secret_file": secretFile(t)}
			if backend == "c10d" {
				conf["secret_file"] = binarySecretFile(t)
			}
			agentInProcess(t, launcher.NodeOptions{RdzvBackend: backend, RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(),
				RdzvConf: conf, NodeRank: -1, NProcPerNode: 1})
			o := launcher.Options{NumNodes: 2, NumProcesses: 1, RdzvBackend: backend, MasterAddr: "127.0.0.1", UsePort: port,
				RdzvID: t.Name(), RdzvConf: conf}
			if backend == "c10d" {
				o.RdzvEndpoint = "127.0.0.1:" + port
			}
			// Twice: the agent takes the second launch too, although with
			// "static" it comes with a new store.
			for i := 0; i < 2; i++ {
				r := waitLaunch(t, launchAsync(context.Background(), &launchertest.Publisher{}, collect, nil, o))
				if r.err != nil {
					t.Fatalf("launch %d: %v", i+1, r.err)
				}
				checkCollect(t, r.res, 2, 1)
			}
		})
	}
}

// Accelerate's way: the same notebook on every node, each with its
// NodeRank; each launcher returns its own ranks' results.
func TestNotebookOnEveryNode(t *testing.T) {
	defer launcher.FakeGPUs()()
	for _, backend := range []string{"etcd", "static"} {
		t.Run(backend, func(t *testing.T) {
			port := freePort(t)
			conf := map[string]string{"secret_file": secretFile(t)}
			o := launcher.Options{NumNodes: 2, NumProcesses: 2, RdzvBackend: backend, MasterAddr: "127.0.0.1", UsePort: port,
				RdzvID: t.Name(), RdzvConf: conf}
			o1 := o
			o1.NodeRank = 1
			pub0, pub1 := &launchertest.Publisher{}, &launchertest.Publisher{}
			c1 := launchAsync(context.Background(), pub1, collect, nil, o1)
			time.Sleep(200 * time.Millisecond) // node 1 may come first
			r0 := waitLaunch(t, launchAsync(context.Background(), pub0, collect, nil, o))
			r1 := waitLaunch(t, c1)
			if r0.err != nil || r1.err != nil {
				t.Fatalf("node 0: %v; node 1: %v", r0.err, r1.err)
			}
			all := append(append([][]any{}, r0.res...), r1.res...)
			checkCollect(t, all, 4, 2)
		})
	}
}

func TestRankFailureOnAgentNamesRankAndNode(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	agentInProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1})
	start := time.Now()
	r := waitLaunch(t, launchAsync(context.Background(), &launchertest.Publisher{}, panicOnRank, []any{3}, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	}))
	cf := asChildFailed(t, r.err)
	if cf.Rank != 3 || cf.LocalRank != 1 || cf.NodeRank != 1 || cf.Host != "127.0.0.1" || cf.Panic != "rank 3 gives up" {
		t.Errorf("failure %+v", cf)
	}
	containsAll(t, "error", r.err.Error(), "launcher: rank 3 (local rank 1 on node 1, 127.0.0.1) failed", "panic: rank 3 gives up")
	t.Logf("failure to return: %s (ranks 0-2 stopped on both nodes)", r.at.Sub(start))
}

// pidsOf returns the pids printed by the workers of node.
func waitNodePIDs(t *testing.T, pub *launchertest.Publisher, n int) []int {
	t.Helper()
	return waitPIDs(t, pub, n)
}

// A node agent killed with SIGKILL: its workers die with it (Pdeathsig),
// and the launch fails at once with an error naming the node.
func TestKilledAgentNamedAndLeavesNoWorker(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	agent := agentProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1})
	pub := &launchertest.Publisher{}
	ch := launchAsync(context.Background(), pub, sleepUntilRestart, []any{5}, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	})
	ps := waitNodePIDs(t, pub, 4)
	killedAt := time.Now()
	agent.Process.Signal(syscall.SIGKILL)
	r := waitLaunch(t, ch)
	var nf *launcher.NodeFailedError
	if !errors.As(r.err, &nf) || nf.NodeRank != 1 || !nf.Lost || nf.Host != "127.0.0.1" || fmt.Sprint(nf.Ranks) != "[2 3]" {
		t.Fatalf("error %v (%#v)", errText(r.err), nf)
	}
	containsAll(t, "error", r.err.Error(), "launcher: node 1 (127.0.0.1, ranks 2-3) was lost: its agent's connection to the launcher closed")
	// The message names the closed connection, not a lease expiry or a
	// keep-alive timeout: the loss was seen at once.
	t.Logf("kill -9 of the agent to the error: %s", r.at.Sub(killedAt))
	waitGone(t, ps)
}

// waitGone waits until every pid is gone: workers sleep forever, so gone
// means stopped (Pdeathsig or the launcher); patience is a hang guard.
func waitGone(t *testing.T, ps []int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for _, p := range ps {
		for syscall.Kill(p, 0) == nil && !isZombie(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(p, 0) == nil && !isZombie(p) {
			t.Errorf("worker %d still running", p)
		}
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndex(s, ")")
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// MaxRestarts across nodes: the agent dies mid-run, a new one joins the
// restarted group, the launch completes.
func TestMaxRestartsWithARestartedAgent(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	o := launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1}
	agent := agentProcess(t, o)
	pub := &launchertest.Publisher{}
	ch := launchAsync(context.Background(), pub, sleepUntilRestart, []any{1}, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(), MaxRestarts: 1,
	})
	waitNodePIDs(t, pub, 4)
	agent.Process.Signal(syscall.SIGKILL)
	deadline := time.Now().Add(patience)
	for !strings.Contains(pub.Text("stderr"), "restarting all 4 workers on 2 nodes (restart 1 of 1)") {
		if time.Now().After(deadline) {
			t.Fatalf("no restart notice: %q", pub.Text("stderr"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	agentProcess(t, o)
	r := waitLaunch(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if fmt.Sprint(r.res) != "[[0] [1] [2] [3]]" {
		t.Errorf("results %v", r.res)
	}
	containsAll(t, "stderr", pub.Text("stderr"), "launcher: node 1 (127.0.0.1, ranks 2-3) was lost; restarting all 4 workers on 2 nodes (restart 1 of 1)")
}

// A node that stops keeping its etcd lease alive (frozen, cut off) is
// named once the lease expires, although its connections stay open. The
// lease_ttl is short, for the expiry to come soon after the SIGSTOP, but not
// so short that a busy machine lets it expire before.
func TestFrozenAgentLeaseExpires(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	agent := agentProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1,
		RdzvConf: map[string]string{"lease_ttl": "5"}})
	pub := &launchertest.Publisher{}
	ch := launchAsync(context.Background(), pub, sleepUntilRestart, []any{5}, launcher.Options{
		NumNodes: 2, NumProcesses: 1, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	})
	ps := waitNodePIDs(t, pub, 2)
	agent.Process.Signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	r := waitLaunch(t, ch)
	var nf *launcher.NodeFailedError
	if !errors.As(r.err, &nf) || nf.NodeRank != 1 || !nf.Lost || !strings.Contains(nf.Reason, "lease expired") {
		t.Fatalf("error %v", errText(r.err))
	}
	t.Logf("SIGSTOP of the agent to the error: %s (lease_ttl 5 s): %v", r.at.Sub(stoppedAt), r.err)
	agent.Process.Signal(syscall.SIGKILL)
	waitGone(t, ps)
}

// Interrupting the cell stops the workers of every node.
func TestInterruptStopsEveryNode(t *testing.T) {
	defer launcher.FakeGPUs()()
	port := freePort(t)
	agentInProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := &launchertest.Publisher{}
	ch := launchAsync(ctx, pub, sleeper, []any{true}, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	})
	ps := waitPIDs(t, pub, 4)
	start := time.Now()
	cancel()
	r := waitLaunch(t, ch)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("error %v", errText(r.err))
	}
	t.Logf("interrupt to return: %s", r.at.Sub(start))
	waitGone(t, ps)
	// The agent takes the next launch, on the same port.
	r = waitLaunch(t, launchAsync(context.Background(), &launchertest.Publisher{}, collect, nil, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	}))
	if r.err != nil {
		t.Fatalf("the launch after the interrupt: %v", r.err)
	}
	checkCollect(t, r.res, 4, 2)
}

func TestMultiNodeOptionErrors(t *testing.T) {
	defer launcher.FakeGPUs()()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("a secret readable by anyone on the host"), 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	for _, c := range []struct {
		o    launcher.Options
		want string
	}{
		{launcher.Options{NumProcesses: 2, RdzvBackend: "etcd"}, `"etcd" is for launches across nodes`},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvBackend: "etcd", RdzvEndpoint: "ftp://x:1"}, "etcd endpoints are host:port, http:// or https://"},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvBackend: "etcd", RdzvEndpoint: "nohost"}, "is not a list of etcd endpoints"},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvBackend: "etcd", UsePort: "0"}, `UsePort "0" (pick a free port) works on one node only`},
		{launcher.Options{NumProcesses: 2, NumNodes: 2}, `needs RdzvConf["secret_file"]`},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvConf: map[string]string{"secret_file": open}}, "can be read by other users (mode 0644)"},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvConf: map[string]string{"secret_file": short}}, "holds 3 characters; use at least 16"},
		{launcher.Options{NumProcesses: 2, NumNodes: 2, RdzvConf: map[string]string{"secret_file": filepath.Join(dir, "none")}}, "secret_file: stat"},
	} {
		_, _, err := run(t, context.Background(), add, []any{1, 2}, c.o)
		if !strings.Contains(errText(err), c.want) {
			t.Errorf("%+v: error %q does not contain %q", c.o, errText(err), c.want)
		}
	}
	for _, c := range []struct {
		o    launcher.NodeOptions
		want string
	}{
		{launcher.NodeOptions{}, "needs the rendezvous endpoint"},
		{launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:1", NodeRank: 0}, "node rank 0 is the notebook's"},
		{launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:1", NodeRank: -1, NProcPerNode: -2}, "must not be negative"},
		{launcher.NodeOptions{RdzvBackend: "static", RdzvEndpoint: "127.0.0.1:1", NodeRank: 1}, `needs a secret shared by every node (RdzvConf "secret_file"`},
	} {
		if err := launcher.RunNode(context.Background(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// The debug pre-flight (ACCELERATE_DEBUG_MODE) runs on every node, agents
// included, before the function.
func TestPreflightAcrossNodes(t *testing.T) {
	defer launcher.FakeGPUs()()
	t.Setenv("ACCELERATE_DEBUG_MODE", "yes")
	port := freePort(t)
	agentInProcess(t, launcher.NodeOptions{RdzvEndpoint: "127.0.0.1:" + port, RdzvID: t.Name(), NodeRank: 1})
	pub := &launchertest.Publisher{}
	r := waitLaunch(t, launchAsync(context.Background(), pub, ran, nil, launcher.Options{
		NumNodes: 2, NumProcesses: 2, RdzvBackend: "etcd", MasterAddr: "127.0.0.1", UsePort: port, RdzvID: t.Name(),
	}))
	if r.err != nil || len(r.res) != 4 {
		t.Fatalf("%v %v", r.err, r.res)
	}
	if n := strings.Count(pub.Text("stdout"), "] ran\n"); n != 4 {
		t.Errorf("the function ran %d times, want 4 (once per rank, after the pre-flight):\n%s", n, pub.Text("stdout"))
	}
}
