package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/accelerate/fsdp"
	"github.com/goaccel/goaccel/launcher"
)

// fsdpFlags are accelerate launch's FSDP arguments: --use_fsdp turns
// sharded data parallelism on, and the launch hands the workers the
// plugin's FSDP_* environment, as Accelerate's launcher does.
type fsdpFlags struct {
	use    bool
	values map[string]*string // FSDP_* variable → the flag's value ("" = unset)
	names  map[string]string  // FSDP_* variable → the flag's name
}

// fsdpFlagVars are the flags, by the variable each sets.
var fsdpFlagVars = []struct{ flag, env, usage string }{
	{"fsdp_version", fsdp.EnvVersion, "FSDP version, 1 or 2 (default 1)"},
	{"fsdp_sharding_strategy", fsdp.EnvShardingStrategy, "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or HYBRID_SHARD_ZERO2 (default FULL_SHARD; FSDP version 1)"},
	{"fsdp_reshard_after_forward", fsdp.EnvReshardAfterForward, "FSDP version 2: true shards the parameters (FULL_SHARD), false keeps them (SHARD_GRAD_OP)"},
	{"fsdp_state_dict_type", fsdp.EnvStateDictType, "FULL_STATE_DICT or SHARDED_STATE_DICT"},
	{"fsdp_offload_params", fsdp.EnvOffloadParams, "true: keep parameters, gradients and optimizer state in host memory"},
	{"fsdp_activation_checkpointing", fsdp.EnvActivationCheckpointing, "true: recompute activations in the backward pass"},
	{"fsdp_cpu_ram_efficient_loading", fsdp.EnvCPURAMEfficientLoading, "true: only process 0 reads a checkpoint"},
}

func (f *fsdpFlags) register(fs *flag.FlagSet, both func(string, func(string))) {
	f.values, f.names = map[string]*string{}, map[string]string{}
	both("use_fsdp", func(n string) {
		fs.BoolVar(&f.use, n, false, "shard the training state across the processes (FSDP; see the --fsdp_ flags)")
	})
	for _, v := range fsdpFlagVars {
		s := new(string)
		f.values[v.env], f.names[v.env] = s, "--"+v.flag
		both(v.flag, func(n string) { fs.StringVar(s, n, "", v.usage) })
	}
}

// fsdpConfig is the FSDP part of Accelerate's config file.
type fsdpConfig struct {
	DistributedType *string        `yaml:"distributed_type"`
	FSDPConfig      map[string]any `yaml:"fsdp_config"`
}

// apply resolves the plugin of the flags over the config file and adds its
// environment to the workers'; bad values are refused here, before any
// worker starts.
func (f fsdpFlags) apply(cfg fsdpConfig, o *launcher.Options) error {
	use := f.use || (cfg.DistributedType != nil && strings.EqualFold(*cfg.DistributedType, "FSDP"))
	set := map[string]string{}
	for _, v := range fsdpFlagVars {
		if x, ok := cfg.FSDPConfig[v.flag]; ok && x != nil {
			set[v.env] = fmt.Sprint(x)
		}
	}
	for env, s := range f.values {
		if *s == "" {
			continue
		}
		if !use {
			return fmt.Errorf("%s means something with --use_fsdp only", f.names[env])
		}
		set[env] = *s
	}
	if !use {
		return nil
	}
	p, err := fsdp.Plugin{}.Resolve(func(k string) (string, bool) { v, ok := set[k]; return v, ok })
	if err != nil {
		for env, name := range f.names {
			err = errors.New(strings.ReplaceAll(err.Error(), env, name))
		}
		return err
	}
	if err := p.Check(max(1, o.NumProcesses)*o.NumNodes, o.NumNodes); err != nil {
		return err
	}
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	for k, v := range p.Env() {
		o.Env[k] = v
	}
	return nil
}
