package cli

// `goaccel launch`: Accelerate's `accelerate launch` for Go programs.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/slurm"
)

// launchFlags are accelerate launch's flags that mean something here.
type launchFlags struct {
	numProcesses, numMachines, machineRank, maxRestarts int
	mainIP, mainPort, mixedPrecision, rdzvBackend       string
	cpu                                                 bool
	configFile, rdzvConf                                string
	noConfig                                            bool // read no config file (goaccel config)
	fsdp                                                fsdpFlags
}

// acceleratorConfig is the part of Accelerate's config file
// (default_config.yaml) that a launch reads.
type acceleratorConfig struct {
	NumProcesses    *int    `yaml:"num_processes"`
	NumMachines     *int    `yaml:"num_machines"`
	MachineRank     *int    `yaml:"machine_rank"`
	MainProcessIP   *string `yaml:"main_process_ip"`
	MainProcessPort *int    `yaml:"main_process_port"`
	MixedPrecision  *string `yaml:"mixed_precision"`
	RdzvBackend     *string `yaml:"rdzv_backend"`
	UseCPU          *bool   `yaml:"use_cpu"`
	MaxRestarts     *int    `yaml:"max_restarts"`
	fsdpConfig      `yaml:",inline"`
}

// defaultConfigFile is where Accelerate keeps its default config:
// $HF_HOME/accelerate/default_config.yaml (HF_HOME defaults to
// ~/.cache/huggingface).
func defaultConfigFile() string {
	home := os.Getenv("HF_HOME")
	if home == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			h, _ := os.UserHomeDir()
			cache = filepath.Join(h, ".cache")
		}
		home = filepath.Join(cache, "huggingface")
	}
	return filepath.Join(home, "accelerate", "default_config.yaml")
}

// runLaunch is `goaccel launch [FLAGS] PROGRAM [ARGS...]`.
func runLaunch(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f launchFlags
	// Accelerate spells them with underscores and with dashes.
	both := func(name string, reg func(string)) {
		reg(name)
		if d := strings.ReplaceAll(name, "_", "-"); d != name {
			reg(d)
		}
	}
	both("num_processes", func(n string) {
		fs.IntVar(&f.numProcesses, n, -1, "worker processes on this machine (default: one per GPU, 1 without GPUs)")
	})
	both("num_machines", func(n string) { fs.IntVar(&f.numMachines, n, -1, "machines in the launch (default 1)") })
	both("machine_rank", func(n string) { fs.IntVar(&f.machineRank, n, -1, "this machine's rank (default 0)") })
	both("main_process_ip", func(n string) {
		fs.StringVar(&f.mainIP, n, "", "the `address` of machine 0 (default 127.0.0.1)")
	})
	both("main_process_port", func(n string) {
		fs.StringVar(&f.mainPort, n, "", "the `port` on machine 0 the processes meet at (default 29500)")
	})
	both("mixed_precision", func(n string) { fs.StringVar(&f.mixedPrecision, n, "", "no, fp16, bf16 or fp8 (default no)") })
	both("rdzv_backend", func(n string) { fs.StringVar(&f.rdzvBackend, n, "", "static, c10d or etcd (default static)") })
	both("max_restarts", func(n string) {
		fs.IntVar(&f.maxRestarts, n, -1, "restarts of the whole group after a failure (default 0)")
	})
	both("config_file", func(n string) {
		fs.StringVar(&f.configFile, n, "", "Accelerate's config `file` (default "+defaultConfigFile()+" when it exists)")
	})
	both("rdzv_conf", func(n string) {
		fs.StringVar(&f.rdzvConf, n, "", "rendezvous settings, `KEY=VALUE,...` (across machines with static or c10d: secret_file=PATH, a file every machine holds)")
	})
	fs.BoolVar(&f.cpu, "cpu", false, "CPU worker processes, even where there are GPUs")
	f.fsdp.register(fs, both)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: goaccel launch [FLAGS] PROGRAM [ARGS...]\n\n"+
			"PROGRAM is a built program, or a Go package or file that goaccel builds first.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("name the program to launch")
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f.fromSlurm(ctx, &opts, os.Getenv); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	installLaunchProbes()
	argv, cleanup, err := programArgv(ctx, fs.Args(), stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	return launcher.LaunchProgram(ctx, argv, opts, &terminal{stdout: stdout, stderr: stderr})
}

// options are the launcher's: the flags over the config file over
// Accelerate's defaults.
func (f launchFlags) options() (launcher.Options, error) {
	var cfg acceleratorConfig
	path := f.configFile
	if path == "" && !f.noConfig {
		if _, err := os.Stat(defaultConfigFile()); err == nil {
			path = defaultConfigFile()
		}
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return launcher.Options{}, fmt.Errorf("--config_file: %w", err)
		}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return launcher.Options{}, fmt.Errorf("--config_file %s: %w", path, err)
		}
	}
	o := launcher.Options{NumProcesses: 0, NumNodes: 1, RdzvBackend: "static"}
	if cfg.NumProcesses != nil {
		o.NumProcesses = *cfg.NumProcesses
	}
	if cfg.NumMachines != nil {
		o.NumNodes = *cfg.NumMachines
	}
	if cfg.MachineRank != nil {
		o.NodeRank = *cfg.MachineRank
	}
	if cfg.MainProcessIP != nil {
		o.MasterAddr = *cfg.MainProcessIP
	}
	if cfg.MainProcessPort != nil {
		o.UsePort = strconv.Itoa(*cfg.MainProcessPort)
	}
	if cfg.MixedPrecision != nil {
		o.MixedPrecision = *cfg.MixedPrecision
	}
	if cfg.RdzvBackend != nil {
		o.RdzvBackend = *cfg.RdzvBackend
	}
	if cfg.UseCPU != nil {
		o.UseCPU = *cfg.UseCPU
	}
	if cfg.MaxRestarts != nil {
		o.MaxRestarts = *cfg.MaxRestarts
	}
	if f.numProcesses >= 0 {
		o.NumProcesses = f.numProcesses
		if f.numProcesses == 0 {
			return o, errors.New("--num_processes must be at least 1")
		}
	}
	if f.numMachines >= 0 {
		o.NumNodes = f.numMachines
	}
	if f.machineRank >= 0 {
		o.NodeRank = f.machineRank
	}
	if f.mainIP != "" {
		o.MasterAddr = f.mainIP
	}
	if f.mainPort != "" {
		if p, err := strconv.Atoi(f.mainPort); err != nil || p < 0 || p > 65535 {
			return o, fmt.Errorf("--main_process_port %q is not a port", f.mainPort)
		}
		o.UsePort = f.mainPort
	}
	if f.mixedPrecision != "" {
		o.MixedPrecision = f.mixedPrecision
	}
	if f.rdzvBackend != "" {
		o.RdzvBackend = f.rdzvBackend
	}
	if f.maxRestarts >= 0 {
		o.MaxRestarts = f.maxRestarts
	}
	if f.cpu {
		o.UseCPU = true
	}
	if f.rdzvConf != "" {
		o.RdzvConf = map[string]string{}
		for _, kv := range strings.Split(f.rdzvConf, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return o, fmt.Errorf("--rdzv_conf %q: want KEY=VALUE,...", f.rdzvConf)
			}
			o.RdzvConf[k] = v
		}
	}
	if o.NumNodes < 1 {
		return o, fmt.Errorf("--num_machines is %d: at least 1", o.NumNodes)
	}
	if o.NodeRank < 0 || o.NodeRank >= o.NumNodes {
		return o, fmt.Errorf("--machine_rank %d is outside the %d machine(s) of the launch (0 to %d)", o.NodeRank, o.NumNodes, o.NumNodes-1)
	}
	if o.NumProcesses == 0 && o.UseCPU {
		o.NumProcesses = 1 // accelerate launch --cpu without a count: one process
	}
	if err := f.fsdp.apply(cfg.fsdpConfig, &o); err != nil {
		return o, err
	}
	return o, nil
}

// fromSlurm fills what flags left out from the Slurm allocation this runs
// in (srun goaccel launch PROG): the machines, this machine's rank, the
// head node's address and the GPUs per machine; flags that contradict the
// allocation are refused, as is a launch across machines from the batch
// script alone (it runs on the first node only: every node needs its own,
// started by srun --ntasks-per-node=1).
func (f launchFlags) fromSlurm(ctx context.Context, o *launcher.Options, getenv func(string) string) error {
	a, ok, err := slurm.FromEnv(getenv)
	if !ok || err != nil {
		return err
	}
	if f.numMachines >= 0 && f.numMachines != a.Nodes {
		return fmt.Errorf("--num_machines %d contradicts the Slurm job, which has %d nodes", f.numMachines, a.Nodes)
	}
	if f.machineRank >= 0 && f.machineRank != a.NodeRank {
		return fmt.Errorf("--machine_rank %d contradicts the Slurm node's rank, SLURM_NODEID %d", f.machineRank, a.NodeRank)
	}
	if a.Nodes > 1 {
		if getenv("SLURM_STEP_ID") == "" {
			return fmt.Errorf("the Slurm job has %d nodes but this runs outside srun, on the first one only: start one goaccel launch per node, srun --ntasks-per-node=1 goaccel launch ...", a.Nodes)
		}
		if tasks, nodes := getenv("SLURM_STEP_NUM_TASKS"), getenv("SLURM_STEP_NUM_NODES"); tasks != "" && tasks != nodes {
			return fmt.Errorf("srun started %s tasks on %s nodes: goaccel launch starts the processes of its node itself, so run one task per node (srun --ntasks-per-node=1)", tasks, nodes)
		}
	}
	o.NumNodes, o.NodeRank = a.Nodes, a.NodeRank
	if o.NumNodes > 1 && f.mainIP == "" {
		head, err := a.HeadAddress(ctx)
		if err != nil {
			return err
		}
		o.MasterAddr = head
		if o.RdzvBackend != "etcd" && o.RdzvConf["secret_file"] == "" {
			return errors.New("across Slurm nodes the processes prove a secret every node holds: give --rdzv_conf secret_file=PATH, a file on a file system every node reads (mode 0600), e.g. made with: head -c 32 /dev/urandom > ~/.goaccel-secret; chmod 600 ~/.goaccel-secret")
		}
	}
	if f.numProcesses < 0 && o.NumProcesses == 0 && a.GPUs > 0 && !o.UseCPU {
		o.NumProcesses = a.GPUs
	}
	return nil
}

// programArgv is the command line of the program to launch: PROGRAM as it
// is when it is a file that can run, else built with the Go toolchain (a
// package path or directory, or .go files) into a temporary directory.
func programArgv(ctx context.Context, args []string, stderr io.Writer) ([]string, func(), error) {
	prog := args[0]
	nothing := func() {}
	if info, err := os.Stat(prog); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 && !strings.HasSuffix(prog, ".go") {
		abs, err := filepath.Abs(prog)
		if err != nil {
			return nil, nothing, err
		}
		return append([]string{abs}, args[1:]...), nothing, nil
	}
	var pkgs []string
	rest := args[1:]
	if strings.HasSuffix(prog, ".go") {
		// go run's convention: the .go files first, then the arguments.
		pkgs = append(pkgs, prog)
		for len(rest) > 0 && strings.HasSuffix(rest[0], ".go") {
			pkgs, rest = append(pkgs, rest[0]), rest[1:]
		}
	} else {
		pkgs = []string{prog}
	}
	dir, err := os.MkdirTemp("", "goaccel-launch-")
	if err != nil {
		return nil, nothing, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "program")
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin}, pkgs...)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return nil, nothing, fmt.Errorf("building %s: %w (the compiler's messages are above)", strings.Join(pkgs, " "), err)
	}
	return append([]string{bin}, rest...), cleanup, nil
}

// terminal is the launch's output: the workers' lines, prefixed by their
// rank, on this process's stdout and stderr; displays as their text.
type terminal struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
}

func (t *terminal) Stream(name, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == "stderr" {
		io.WriteString(t.stderr, text)
		return
	}
	io.WriteString(t.stdout, text)
}

func (t *terminal) Display(data frontend.MIMEBundle, _ map[string]any, _ string) {
	if s, ok := data["text/plain"].(string); ok {
		t.Stream("stdout", strings.TrimSuffix(s, "\n")+"\n")
	}
}

func (t *terminal) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	t.Display(data, md, id)
}

func (t *terminal) ClearOutput(bool) {}
