package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/launcher"
)

// cliHelperArgs, in a re-executed test binary, are the command line it
// runs (as the goaccel binary would) before exiting with its code.
const cliHelperArgs = "GOACCEL_CLI_TEST_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(cliHelperArgs); args != "" {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Two machines, Accelerate's way: the same command on each, with its own
// --machine_rank, meeting at machine 0's address (here both on this host;
// the second is another process).
func TestLaunchAcrossTwoMachines(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("shared by both machines"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	args := func(rank int) []string {
		return []string{"launch", "--cpu", "--num_processes", "2", "--num_machines", "2", "--machine_rank", strconv.Itoa(rank),
			"--main_process_ip", "127.0.0.1", "--main_process_port", port, "--rdzv_conf", "secret_file=" + secret, "./testdata/launchprog"}
	}
	other := exec.Command(os.Args[0], "-test.run=^$")
	other.Env = append(os.Environ(), cliHelperArgs+"="+strings.Join(args(1), "\n"))
	var otherOut bytes.Buffer
	other.Stdout, other.Stderr = &otherOut, &otherOut
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, args(0)...)
	otherErr := other.Wait()
	if code != 0 || otherErr != nil {
		t.Fatalf("machine 0: exit %d\n%s%s\nmachine 1: %v\n%s", code, out, stderr, otherErr, otherOut.String())
	}
	all := out + otherOut.String()
	for r := 0; r < 4; r++ {
		if !regexp.MustCompile(`(?m)^\[node \d rank ` + strconv.Itoa(r) + `\] rank ` + strconv.Itoa(r) + ` of 4: sum 10,`).MatchString(all) {
			t.Errorf("no line of rank %d in\n%s", r, all)
		}
	}
}

// goaccel launch builds a Go program and runs it on N processes that join
// one process group, their lines prefixed by rank, as accelerate launch
// runs a script.
func TestLaunchRunsAProgramOnEveryRank(t *testing.T) {
	code, out, stderr := runCmd(t, "launch", "--cpu", "--num_processes", "3", "--mixed-precision", "bf16",
		"--main_process_port", "0", "./testdata/launchprog", "a", "b c")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for r := 0; r < 3; r++ {
		want := regexp.MustCompile(`(?m)^\[rank ` + string(rune('0'+r)) + `\] rank ` + string(rune('0'+r)) + ` of 3: sum 6, args \["a" "b c"\], mixed precision bf16$`)
		if !want.MatchString(out) {
			t.Errorf("no line of rank %d in\n%s", r, out)
		}
	}
}

// A rank that fails stops the others, and the error names it.
func TestLaunchNamesTheRankThatFailed(t *testing.T) {
	t.Setenv("FAIL_RANK", "1")
	code, out, stderr := runCmd(t, "launch", "--cpu", "--num-processes", "2", "--main_process_port", "0", "./testdata/launchprog")
	if code == 0 {
		t.Fatalf("exit 0 with a failing rank\n%s", out)
	}
	if !strings.Contains(stderr, "rank 1 (local rank 1) failed (exit status 3)") || !strings.Contains(stderr, "failing on purpose") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

func TestLaunchRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.go")
	if err := os.WriteFile(broken, []byte("package main\n\nfunc main() {\n\tundefinedName()\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"launch", broken}, "broken.go:4:2: undefined: undefinedName"},
		{[]string{"launch"}, "name the program to launch"},
		{[]string{"launch", "--num_machines", "2", "--machine_rank", "2", "prog"}, "--machine_rank 2 is outside the 2 machine(s)"},
		{[]string{"launch", "--config_file", filepath.Join(dir, "none.yaml"), "prog"}, "none.yaml: no such file"},
		{[]string{"launch", "--main_process_port", "http", "prog"}, `--main_process_port "http" is not a port`},
		{[]string{"launch", "--cpu", "--mixed_precision", "fp12", "--num_processes", "2", "prog"}, "fp12"},
		{[]string{"launch", "--fsdp_sharding_strategy", "SHARD_GRAD_OP", "prog"}, "--fsdp_sharding_strategy means something with --use_fsdp only"},
		{[]string{"launch", "--use_fsdp", "--fsdp_sharding_strategy", "SHARD_ALL", "prog"}, `unknown sharding strategy "SHARD_ALL": choose between FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or their numbers 1-5) (from --fsdp_sharding_strategy)`},
		{[]string{"launch", "--use_fsdp", "--cpu", "--num_processes", "4", "--fsdp_sharding_strategy", "HYBRID_SHARD", "prog"}, "HYBRID_SHARD shards inside each node and replicates across nodes, but this group of 4 processes runs on one node: use FULL_SHARD"},
		{[]string{"launch", "--use_fsdp", "--fsdp_offload_params", "sometimes", "prog"}, `--fsdp_offload_params="sometimes": invalid truth value`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, stderr, tc.want)
		}
	}
}

// The config file Accelerate writes is read, and flags override it.
func TestLaunchReadsAccelerateConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "default_config.yaml")
	if err := os.WriteFile(cfg, []byte("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nmixed_precision: fp16\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\nmain_process_port: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "launch", "--config_file", cfg, "--mixed_precision", "no", "./testdata/launchprog")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if strings.Count(out, " of 2: sum 3") != 2 || !strings.Contains(out, "mixed precision no") {
		t.Errorf("stdout:\n%s", out)
	}
}

// FSDP from the config file Accelerate writes (distributed_type FSDP and
// its fsdp_config), a flag overriding one field: every worker builds its
// Accelerator with that plugin.
func TestLaunchCarriesTheFSDPPlugin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "default_config.yaml")
	yaml := "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n  fsdp_state_dict_type: FULL_STATE_DICT\n" +
		"  fsdp_version: 1\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\nmain_process_port: 0\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "launch", "--config_file", cfg, "--fsdp_state_dict_type", "sharded_state_dict", "./testdata/launchprog")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for r := 0; r < 2; r++ {
		want := fmt.Sprintf("rank %d: FSDP FullyShardedDataParallelPlugin(fsdp_version=1, sharding_strategy=SHARD_GRAD_OP, state_dict_type=SHARDED_STATE_DICT, cpu_offload=false)", r)
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// goaccel config writes the file Accelerate's launch reads; goaccel env
// shows it with the versions and the machine.
func TestConfigThenLaunchThenEnv(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "accelerate", "default_config.yaml")
	code, out, stderr := runCmd(t, "config", "--config_file", cfg, "--num_processes", "2", "--cpu", "--main_process_port", "0")
	if code != 0 || !strings.Contains(out, "accelerate configuration saved at "+cfg) {
		t.Fatalf("config: %d %s %s", code, out, stderr)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"distributed_type: MULTI_CPU\n", "num_processes: 2\n", "use_cpu: true\n", "mixed_precision: \"no\"\n", "compute_environment: LOCAL_MACHINE\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%q not in\n%s", want, data)
		}
	}
	code, out, stderr = runCmd(t, "launch", "--config_file", cfg, "./testdata/launchprog")
	if code != 0 || strings.Count(out, " of 2: sum 3") != 2 {
		t.Errorf("launch with the config: %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runCmd(t, "env", "--config_file", cfg)
	if code != 0 {
		t.Fatalf("env: %d %s", code, stderr)
	}
	for _, want := range []string{"- goaccel version: ", "- Go version: go1.", "- CPUs: ", "- GPUs: ", "- Accelerate config (" + cfg + "):\n", "\t- num_processes: 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not in\n%s", want, out)
		}
	}
	// Contradictions are refused before anything is written.
	code, _, stderr = runCmd(t, "config", "--config_file", cfg, "--num_machines", "2")
	if code == 0 || !strings.Contains(stderr, "needs --main_process_ip") {
		t.Errorf("2 machines without an address: %d %s", code, stderr)
	}
}

// Inside a Slurm job the allocation fills what flags leave out, and flags
// that contradict it are refused (the real Slurm runs in e2e/test_slurm.py).
func TestLaunchTakesTheSlurmAllocation(t *testing.T) {
	job := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1",
		"SLURM_JOB_NODELIST": "localhost,n2", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2",
		"SLURM_GPUS_ON_NODE": "4"}
	getenv := func(k string) string { return job[k] }
	flags := launchFlags{numProcesses: -1, numMachines: -1, machineRank: -1, maxRestarts: -1}
	o := launcher.Options{RdzvConf: map[string]string{"secret_file": "/shared/s"}}
	if err := flags.fromSlurm(context.Background(), &o, getenv); err != nil {
		t.Fatal(err)
	}
	if o.NumNodes != 2 || o.NodeRank != 1 || o.MasterAddr != "localhost" || o.NumProcesses != 4 {
		t.Errorf("options %+v", o)
	}
	for _, c := range []struct {
		change func()
		want   string
	}{
		{func() { flags.machineRank = 0 }, "--machine_rank 0 contradicts the Slurm node's rank, SLURM_NODEID 1"},
		{func() { flags.numMachines = 3 }, "--num_machines 3 contradicts the Slurm job, which has 2 nodes"},
		{func() { job["SLURM_STEP_NUM_TASKS"] = "4" }, "srun started 4 tasks on 2 nodes"},
		{func() { delete(job, "SLURM_STEP_ID") }, "outside srun, on the first one only"},
		{func() { o.RdzvConf = nil }, "give --rdzv_conf secret_file=PATH"},
	} {
		saved, savedJob, savedConf := flags, map[string]string{}, o.RdzvConf
		for k, v := range job {
			savedJob[k] = v
		}
		c.change()
		o2 := launcher.Options{RdzvConf: o.RdzvConf}
		if err := flags.fromSlurm(context.Background(), &o2, getenv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
		flags, job, o.RdzvConf = saved, savedJob, savedConf
	}
}
