package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher/slurm"
)

// A notebook whose kernel runs inside a Slurm allocation of several nodes
// (a kernel started by `srun jupyter ...` or from a batch script) launches
// on all of them: NotebookLauncher with NumNodes left 0 makes the kernel
// node 0 and starts one `goaccel node` agent on each other node with srun,
// as a job step of the allocation, for that launch. The nodes meet at a
// c10d store on the kernel's node; the secret the store admits them by is
// made for the launch and reaches the agents on srun's standard input, never
// on a command line or in a file another node would need.

// slurmSeq numbers the launches of this process (their rendezvous ids).
var slurmSeq atomic.Int64

// slurmAgents is the srun step running the agents of one launch.
type slurmAgents struct {
	cmd     *exec.Cmd
	secret  string // the secret file of node 0 (removed by stop)
	stderr  *tailBuffer
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// fromSlurmAllocation returns opts for a launch across the allocation the
// process runs in, with its agents started, or opts unchanged (and nil)
// when there is no allocation of several nodes or opts already say where
// the nodes are.
func fromSlurmAllocation(ctx context.Context, opts Options, getenv func(string) string, pub frontend.Publisher) (Options, *slurmAgents, error) {
	if opts.NumNodes != 0 || opts.RdzvEndpoint != "" {
		return opts, nil, nil
	}
	a, ok, err := slurm.FromEnv(getenv)
	if err != nil || !ok || a.Nodes < 2 {
		return opts, nil, err
	}
	here := getenv("SLURMD_NODENAME")
	if here == "" {
		return opts, nil, fmt.Errorf("launcher: the kernel sees Slurm job %s of %d nodes but runs on none of them (SLURMD_NODENAME is unset: salloc's shell runs on the login node): start Jupyter inside the allocation, e.g. `srun --nodes=1 --pty jupyter lab`, or set NumNodes: 1 to launch here only", a.JobID, a.Nodes)
	}
	found := false
	for _, h := range a.Hosts {
		found = found || h == here
	}
	if !found {
		return opts, nil, fmt.Errorf("launcher: this node, %s, is not one of Slurm job %s's nodes (%s)", here, a.JobID, strings.Join(a.Hosts, ","))
	}
	addr, err := slurm.NodeAddress(ctx, here)
	if err != nil {
		return opts, nil, fmt.Errorf("launcher: %w", err)
	}
	port, err := pg.FreePort(addr)
	if err != nil {
		return opts, nil, fmt.Errorf("launcher: a port for the rendezvous store on %s: %w", addr, err)
	}
	secret, err := newSecret()
	if err != nil {
		return opts, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return opts, nil, fmt.Errorf("launcher: the goaccel binary to run on the other nodes: %w", err)
	}
	id := fmt.Sprintf("slurm-%s-%d-%d", a.JobID, os.Getpid(), slurmSeq.Add(1))
	endpoint := net.JoinHostPort(addr, strconv.Itoa(port))
	others := a.Nodes - 1
	args := []string{
		"--nodes=" + strconv.Itoa(others), "--ntasks=" + strconv.Itoa(others), "--ntasks-per-node=1",
		"--exclude=" + here, "--overlap", "--input=all", "--kill-on-bad-exit=0", "--job-name=goaccel-node",
		exe, "node", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", id,
		"--rdzv-conf", "secret_file=-",
	}
	ag := &slurmAgents{done: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	f, err := os.CreateTemp("", "goaccel-secret-*")
	if err != nil {
		return opts, nil, fmt.Errorf("launcher: the launch secret: %w", err)
	}
	ag.secret = f.Name()
	if _, err := f.WriteString(secret); err != nil {
		f.Close()
		ag.removeSecret()
		return opts, nil, fmt.Errorf("launcher: the launch secret: %w", err)
	}
	f.Close()
	ag.cmd = exec.Command("srun", args...)
	ag.cmd.Stdin = strings.NewReader(secret + "\n")
	ag.cmd.Stdout = ag.stderr
	ag.cmd.Stderr = ag.stderr
	ag.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ag.cmd.Start(); err != nil {
		ag.removeSecret()
		return opts, nil, fmt.Errorf("launcher: starting the node agents with srun: %w", err)
	}
	go func() {
		ag.waitErr = ag.cmd.Wait()
		close(ag.done)
	}()
	pub.Stream("stdout", fmt.Sprintf("Slurm job %s: node 0 is this node (%s); srun starts the agents of nodes 1-%d (%s).\n",
		a.JobID, here, others, strings.Join(without(a.Hosts, here), ",")))
	opts.NumNodes = a.Nodes
	opts.NodeRank = 0
	opts.RdzvBackend = "c10d"
	opts.RdzvEndpoint = endpoint
	opts.MasterAddr = addr
	opts.RdzvID = id
	conf := map[string]string{}
	for k, v := range opts.RdzvConf {
		conf[k] = v
	}
	conf["secret_file"] = ag.secret
	opts.RdzvConf = conf
	return opts, ag, nil
}

// watch cancels the launch's context when srun ends before the launch
// does: an agent that could not start (or a node lost) must not leave node
// 0 waiting for it.
func (ag *slurmAgents) watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-ag.done:
			cancel(fmt.Errorf("the srun step of the node agents ended (%v): %s", ag.waitErr, strings.TrimSpace(ag.stderr.String())))
		case <-stop:
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// stop ends the agents' step (SIGTERM to srun, which passes it to the
// agents; SIGKILL after a grace period) and removes the secret.
func (ag *slurmAgents) stop() {
	ag.once.Do(func() {
		defer ag.removeSecret()
		select {
		case <-ag.done:
			return
		default:
		}
		_ = syscall.Kill(-ag.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-ag.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-ag.cmd.Process.Pid, syscall.SIGKILL)
			<-ag.done
		}
	})
}

func (ag *slurmAgents) removeSecret() {
	if ag.secret != "" {
		_ = os.Remove(ag.secret)
	}
}

func without(hosts []string, h string) []string {
	var out []string
	for _, x := range hosts {
		if x != h {
			out = append(out, x)
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// agentsError adds to a launch failure caused by the agents' step ending.
func agentsError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && err != nil {
		return fmt.Errorf("launcher: %w (%v)", err, cause)
	}
	return err
}
