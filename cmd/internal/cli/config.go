package cli

// `goaccel config` and `goaccel env`: Accelerate's `accelerate config
// default` (without its questions) and `accelerate env`.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/goaccel/goaccel/gpu"
)

// runConfig is `goaccel config [FLAGS]`: it writes the config file
// Accelerate's launch reads (default_config.yaml, its keys), from flags,
// checked as a launch checks them.
func runConfig(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f launchFlags
	path := fs.String("config_file", defaultConfigFile(), "where to write the config `file`")
	fs.StringVar(path, "config-file", defaultConfigFile(), "the same as --config_file")
	fs.IntVar(&f.numProcesses, "num_processes", 1, "worker processes per machine")
	fs.IntVar(&f.numMachines, "num_machines", 1, "machines")
	fs.IntVar(&f.machineRank, "machine_rank", 0, "this machine's rank")
	fs.StringVar(&f.mainIP, "main_process_ip", "", "machine 0's `address` (needed with more than one machine)")
	fs.StringVar(&f.mainPort, "main_process_port", "29500", "the `port` the processes meet at on machine 0")
	fs.StringVar(&f.mixedPrecision, "mixed_precision", "no", "no, fp16, bf16 or fp8")
	fs.StringVar(&f.rdzvBackend, "rdzv_backend", "static", "static, c10d or etcd")
	fs.IntVar(&f.maxRestarts, "max_restarts", 0, "restarts after a failure")
	fs.BoolVar(&f.cpu, "cpu", false, "CPU processes even where there are GPUs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (goaccel config takes flags only)", fs.Arg(0))
	}
	f.noConfig = true // the options of these flags alone
	opts, err := f.options()
	if err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.NumNodes > 1 && f.mainIP == "" {
		return errors.New("--num_machines > 1 needs --main_process_ip (machine 0's address)")
	}
	distributed := "NO"
	switch {
	case opts.NumProcesses > 1 || opts.NumNodes > 1:
		distributed = "MULTI_GPU"
		if opts.UseCPU {
			distributed = "MULTI_CPU"
		}
	}
	cfg := yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v any) {
		var key, val yaml.Node
		key.SetString(k)
		_ = val.Encode(v)
		cfg.Content = append(cfg.Content, &key, &val)
	}
	add("compute_environment", "LOCAL_MACHINE")
	add("debug", false)
	add("distributed_type", distributed)
	add("downcast_bf16", "no")
	add("enable_cpu_affinity", false)
	add("machine_rank", opts.NodeRank)
	if opts.NumNodes > 1 {
		add("main_process_ip", opts.MasterAddr)
		add("main_process_port", mustAtoi(f.mainPort))
	}
	add("main_training_function", "main")
	add("mixed_precision", strings.ToLower(opts.MixedPrecision))
	add("num_machines", opts.NumNodes)
	add("num_processes", opts.NumProcesses)
	add("rdzv_backend", opts.RdzvBackend)
	add("same_network", true)
	add("tpu_env", []string{})
	add("tpu_use_cluster", false)
	add("tpu_use_sudo", false)
	add("use_cpu", opts.UseCPU)
	data, err := yaml.Marshal(&cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*path, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "accelerate configuration saved at %s\n", *path)
	return nil
}

func mustAtoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

// runEnv is `goaccel env`: what a bug report needs, as `accelerate env`.
func runEnv(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config_file", "", "the config `file` to show (default: Accelerate's default one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	exe, _ := os.Executable()
	var b strings.Builder
	b.WriteString("\nCopy-and-paste the text below in your GitHub issue\n\n")
	fmt.Fprintf(&b, "- goaccel version: %s\n", versionString())
	fmt.Fprintf(&b, "- Go version: %s (%s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- Platform: %s\n", platform())
	fmt.Fprintf(&b, "- goaccel location: %s\n", exe)
	fmt.Fprintf(&b, "- CPUs: %d\n", runtime.NumCPU())
	if ram := systemRAM(); ram > 0 {
		fmt.Fprintf(&b, "- System RAM: %.2f GB\n", float64(ram)/(1<<30))
	}
	devs, err := gpu.Discover()
	switch {
	case errors.Is(err, gpu.ErrNoGPU):
		b.WriteString("- GPUs: none\n")
	case err != nil:
		fmt.Fprintf(&b, "- GPUs: unknown (%v)\n", err)
	default:
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		fmt.Fprintf(&b, "- GPUs: %d (%s)\n", len(devs), strings.Join(names, ", "))
	}
	cfg := *path
	if cfg == "" {
		cfg = defaultConfigFile()
	}
	data, err := os.ReadFile(cfg)
	switch {
	case err == nil:
		fmt.Fprintf(&b, "- Accelerate config (%s):\n", cfg)
		var m yaml.Node
		if yaml.Unmarshal(data, &m) == nil && len(m.Content) == 1 && m.Content[0].Kind == yaml.MappingNode {
			kv := m.Content[0].Content
			for i := 0; i+1 < len(kv); i += 2 {
				v := kv[i+1].Value
				if kv[i+1].Kind != yaml.ScalarNode {
					out, _ := yaml.Marshal(kv[i+1])
					v = strings.TrimSpace(string(out))
				}
				fmt.Fprintf(&b, "\t- %s: %s\n", kv[i].Value, v)
			}
		} else {
			fmt.Fprintf(&b, "\t(not YAML Accelerate reads)\n")
		}
	case errors.Is(err, os.ErrNotExist) && *path == "":
		b.WriteString("- Accelerate config: Not found\n")
	default:
		return fmt.Errorf("--config_file: %w", err)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// platform is the kernel's name and release.
func platform() string {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if len(release) == 0 {
		return runtime.GOOS
	}
	return strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:] + "-" + strings.TrimSpace(string(release))
}

// systemRAM is the machine's memory in bytes (0 when unknown).
func systemRAM() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}
