// Package fsdp is Accelerate's FullyShardedDataParallelPlugin: which parts
// of a model's training state the processes of a group shard between them
// instead of each holding all of it (DDP), and how checkpoints of that
// state are written. Each field left unset falls back to the FSDP_*
// environment variable Accelerate reads for it (what `accelerate launch
// --use_fsdp --fsdp_...` and `goaccel launch` set), and FSDP is on when a
// plugin is given to the Accelerator or ACCELERATE_USE_FSDP is true.
//
// This package only describes and validates the configuration; the
// trainers that shard (accelerate/gomlx) read it from the Accelerator.
package fsdp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/launchenv"
)

// Environment variables, as Accelerate's launcher sets them.
const (
	EnvUseFSDP                 = "ACCELERATE_USE_FSDP"
	EnvVersion                 = "FSDP_VERSION"
	EnvShardingStrategy        = "FSDP_SHARDING_STRATEGY"
	EnvReshardAfterForward     = "FSDP_RESHARD_AFTER_FORWARD"
	EnvStateDictType           = "FSDP_STATE_DICT_TYPE"
	EnvOffloadParams           = "FSDP_OFFLOAD_PARAMS"
	EnvAutoWrapPolicy          = "FSDP_AUTO_WRAP_POLICY"
	EnvBackwardPrefetch        = "FSDP_BACKWARD_PREFETCH"
	EnvForwardPrefetch         = "FSDP_FORWARD_PREFETCH"
	EnvUseOrigParams           = "FSDP_USE_ORIG_PARAMS"
	EnvSyncModuleStates        = "FSDP_SYNC_MODULE_STATES"
	EnvCPURAMEfficientLoading  = "FSDP_CPU_RAM_EFFICIENT_LOADING"
	EnvActivationCheckpointing = "FSDP_ACTIVATION_CHECKPOINTING"
)

// ShardingStrategy is torch's FSDP ShardingStrategy, with its values (1-5),
// which Accelerate also accepts in FSDP_SHARDING_STRATEGY.
type ShardingStrategy int

const (
	// FullShard shards parameters, gradients and optimizer state (ZeRO-3).
	FullShard ShardingStrategy = iota + 1
	// ShardGradOp shards gradients and optimizer state; every process
	// keeps the whole parameters (ZeRO-2).
	ShardGradOp
	// NoShard is DDP.
	NoShard
	// HybridShard is FullShard inside a node and replicas across nodes.
	HybridShard
	// HybridShardZero2 is ShardGradOp inside a node and replicas across
	// nodes.
	HybridShardZero2
)

var strategyNames = []string{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"}

func (s ShardingStrategy) String() string {
	if s >= FullShard && s <= HybridShardZero2 {
		return strategyNames[s-1]
	}
	return fmt.Sprintf("ShardingStrategy(%d)", int(s))
}

// ShardsParameters reports whether parameters live as shards between steps.
func (s ShardingStrategy) ShardsParameters() bool { return s == FullShard || s == HybridShard }

// ShardsOptimizerState reports whether the optimizer state (and the reduced
// gradients) are sharded: every strategy but NoShard.
func (s ShardingStrategy) ShardsOptimizerState() bool { return s != NoShard }

// Hybrid reports whether the strategy shards within a node only.
func (s ShardingStrategy) Hybrid() bool { return s == HybridShard || s == HybridShardZero2 }

// ParseShardingStrategy reads a strategy as Accelerate does: its name in
// any case, or its number (1 = FULL_SHARD ... 5 = HYBRID_SHARD_ZERO2).
func ParseShardingStrategy(s string) (ShardingStrategy, error) {
	v := strings.ToUpper(strings.TrimSpace(s))
	for i, n := range strategyNames {
		if v == n {
			return ShardingStrategy(i + 1), nil
		}
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(strategyNames) {
		return ShardingStrategy(n), nil
	}
	return 0, fmt.Errorf("fsdp: unknown sharding strategy %q: choose between %s (or their numbers 1-%d)", s, strings.Join(strategyNames, ", "), len(strategyNames))
}

// StateDictType is torch's FSDP StateDictType: how checkpoints hold the
// sharded state.
type StateDictType int

const (
	// FullStateDict gathers the whole state on process 0, which writes it.
	FullStateDict StateDictType = iota + 1
	// LocalStateDict is each process's flat shard as it is (torch's).
	LocalStateDict
	// ShardedStateDict has each process write its shard, with an index of
	// the layout.
	ShardedStateDict
)

var stateDictNames = []string{"FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"}

func (t StateDictType) String() string {
	if t >= FullStateDict && t <= ShardedStateDict {
		return stateDictNames[t-1]
	}
	return fmt.Sprintf("StateDictType(%d)", int(t))
}

// ParseStateDictType reads a state dict type by name (any case) or number.
func ParseStateDictType(s string) (StateDictType, error) {
	v := strings.ToUpper(strings.TrimSpace(s))
	for i, n := range stateDictNames {
		if v == n {
			return StateDictType(i + 1), nil
		}
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(stateDictNames) {
		return StateDictType(n), nil
	}
	return 0, fmt.Errorf("fsdp: unknown state dict type %q: choose between %s", s, strings.Join(stateDictNames, ", "))
}

// Plugin is FullyShardedDataParallelPlugin. The zero value of a field means
// "from the environment, else Accelerate's default" (Resolve fills it).
type Plugin struct {
	// Version is 1 or 2 (FSDP_VERSION, default 1). Version 2 has no
	// ShardingStrategy: ReshardAfterForward true is FULL_SHARD, false
	// SHARD_GRAD_OP.
	Version int
	// ShardingStrategy (FSDP_SHARDING_STRATEGY, default FULL_SHARD).
	ShardingStrategy ShardingStrategy
	// ReshardAfterForward is FSDP2's switch (FSDP_RESHARD_AFTER_FORWARD,
	// default true).
	ReshardAfterForward *bool
	// StateDictType (FSDP_STATE_DICT_TYPE; default FULL_STATE_DICT with
	// version 1, SHARDED_STATE_DICT with version 2).
	StateDictType StateDictType
	// CPUOffload keeps parameters, gradients and optimizer state in host
	// memory between uses (FSDP_OFFLOAD_PARAMS). On CPU processes they are
	// there already.
	CPUOffload *bool
	// ActivationCheckpointing recomputes activations in the backward pass
	// (FSDP_ACTIVATION_CHECKPOINTING).
	ActivationCheckpointing *bool
	// CPURAMEfficientLoading has only process 0 read a checkpoint
	// (FSDP_CPU_RAM_EFFICIENT_LOADING).
	CPURAMEfficientLoading *bool
	// MixedPrecisionPolicy is Accelerate's mixed_precision_policy (torch's
	// MixedPrecision); nil leaves the dtypes to the Accelerator's mixed
	// precision. Accelerate reads no environment variable for it.
	MixedPrecisionPolicy *MixedPrecisionPolicy
}

// MixedPrecisionPolicy is the dtypes sharded training uses: ParamDType for
// the parameters while they are gathered and computed with, ReduceDType for
// the gradients while they are reduced. Each is "float32", "bfloat16" or
// "float16" (Resolve also takes "fp32", "bf16", "fp16" and torch's
// "torch.bfloat16"); ParamDType "" is the Accelerator's mixed precision,
// ReduceDType "" is ParamDType (torch's default), or float32.
type MixedPrecisionPolicy struct {
	ParamDType, ReduceDType string
}

// ParseDType reads a dtype as MixedPrecisionPolicy takes it, returning
// "float32", "bfloat16" or "float16".
func ParseDType(s string) (string, error) {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "torch.")
	switch v {
	case "float32", "fp32", "no":
		return "float32", nil
	case "bfloat16", "bf16":
		return "bfloat16", nil
	case "float16", "fp16", "half":
		return "float16", nil
	}
	return "", fmt.Errorf("fsdp: unknown dtype %q: choose between float32, bfloat16 and float16 (or fp32, bf16, fp16)", s)
}

// Enabled reports whether the environment turns FSDP on
// (ACCELERATE_USE_FSDP, read as Accelerate's str_to_bool).
func Enabled(lookup func(string) (string, bool)) (bool, error) {
	v, ok := lookup(EnvUseFSDP)
	if !ok || strings.TrimSpace(v) == "" {
		return false, nil
	}
	b, err := launchenv.StrToBool(v)
	if err != nil {
		return false, fmt.Errorf("fsdp: %s=%q: %w", EnvUseFSDP, v, err)
	}
	return b, nil
}

// Resolve returns the plugin with every unset field taken from the
// environment (lookup, os.LookupEnv in a process) or Accelerate's default,
// or an error naming the variable or field that is wrong.
func (p Plugin) Resolve(lookup func(string) (string, bool)) (Plugin, error) {
	get := func(k string) (string, bool) {
		v, ok := lookup(k)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	if p.Version == 0 {
		p.Version = 1
		if v, ok := get(EnvVersion); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, fmt.Errorf("fsdp: %s=%q: want 1 or 2", EnvVersion, v)
			}
			p.Version = n
		}
	}
	if p.Version != 1 && p.Version != 2 {
		return p, fmt.Errorf("fsdp: FSDP version %d: want 1 or 2", p.Version)
	}
	if p.ShardingStrategy != 0 && (p.ShardingStrategy < FullShard || p.ShardingStrategy > HybridShardZero2) {
		return p, fmt.Errorf("fsdp: %v is not a sharding strategy: choose between %s", p.ShardingStrategy, strings.Join(strategyNames, ", "))
	}
	if p.Version == 2 {
		// A resolved plugin (ShardingStrategy derived from
		// ReshardAfterForward) resolves to itself.
		resolved := p.ReshardAfterForward != nil &&
			p.ShardingStrategy == map[bool]ShardingStrategy{true: FullShard, false: ShardGradOp}[*p.ReshardAfterForward]
		if p.ShardingStrategy != 0 && !resolved {
			return p, fmt.Errorf("fsdp: FSDP version 2 has no sharding strategy (%v): set ReshardAfterForward (true: FULL_SHARD, false: SHARD_GRAD_OP)", p.ShardingStrategy)
		}
		if p.ReshardAfterForward == nil {
			b := true
			if v, ok := get(EnvReshardAfterForward); ok {
				var err error
				if b, err = launchenv.StrToBool(v); err != nil {
					return p, fmt.Errorf("fsdp: %s=%q with FSDP version 2: %w", EnvReshardAfterForward, v, err)
				}
			}
			p.ReshardAfterForward = &b
		}
		p.ShardingStrategy = ShardGradOp
		if *p.ReshardAfterForward {
			p.ShardingStrategy = FullShard
		}
	} else {
		if p.ReshardAfterForward != nil {
			return p, fmt.Errorf("fsdp: ReshardAfterForward is FSDP version 2's; with version 1 set ShardingStrategy")
		}
		if p.ShardingStrategy == 0 {
			p.ShardingStrategy = FullShard
			if v, ok := get(EnvShardingStrategy); ok {
				s, err := ParseShardingStrategy(v)
				if err != nil {
					return p, fmt.Errorf("%w (from %s)", err, EnvShardingStrategy)
				}
				p.ShardingStrategy = s
			}
		}
	}
	if p.StateDictType == 0 {
		p.StateDictType = FullStateDict
		if p.Version == 2 {
			p.StateDictType = ShardedStateDict
		}
		if v, ok := get(EnvStateDictType); ok {
			t, err := ParseStateDictType(v)
			if err != nil {
				return p, fmt.Errorf("%w (from %s)", err, EnvStateDictType)
			}
			p.StateDictType = t
		}
	} else if p.StateDictType < FullStateDict || p.StateDictType > ShardedStateDict {
		return p, fmt.Errorf("fsdp: %v is not a state dict type: choose between %s", p.StateDictType, strings.Join(stateDictNames, ", "))
	}
	if mp := p.MixedPrecisionPolicy; mp != nil {
		resolved := *mp
		for _, f := range []struct {
			name string
			v    *string
		}{{"ParamDType", &resolved.ParamDType}, {"ReduceDType", &resolved.ReduceDType}} {
			if *f.v == "" {
				continue
			}
			d, err := ParseDType(*f.v)
			if err != nil {
				return p, fmt.Errorf("%w (MixedPrecisionPolicy.%s)", err, f.name)
			}
			*f.v = d
		}
		p.MixedPrecisionPolicy = &resolved
	}
	for _, f := range []struct {
		dst *(*bool)
		env string
	}{
		{&p.CPUOffload, EnvOffloadParams},
		{&p.ActivationCheckpointing, EnvActivationCheckpointing},
		{&p.CPURAMEfficientLoading, EnvCPURAMEfficientLoading},
	} {
		if *f.dst != nil {
			continue
		}
		b := false
		if v, ok := get(f.env); ok {
			var err error
			if b, err = launchenv.StrToBool(v); err != nil {
				return p, fmt.Errorf("fsdp: %s=%q: %w", f.env, v, err)
			}
		}
		*f.dst = &b
	}
	return p, nil
}

// Check refuses a resolved plugin that cannot shard a group of
// numProcesses processes on numNodes nodes.
func (p Plugin) Check(numProcesses, numNodes int) error {
	if p.ShardingStrategy.Hybrid() && numNodes < 2 {
		return fmt.Errorf("fsdp: %v shards inside each node and replicates across nodes, but this group of %d processes runs on one node: use %v",
			p.ShardingStrategy, numProcesses, map[bool]ShardingStrategy{true: FullShard, false: ShardGradOp}[p.ShardingStrategy == HybridShard])
	}
	if p.ShardingStrategy.Hybrid() && numProcesses%numNodes != 0 {
		return fmt.Errorf("fsdp: %v needs the same number of processes on every node; %d processes on %d nodes", p.ShardingStrategy, numProcesses, numNodes)
	}
	return nil
}

// Offloads reports CPUOffload (false before Resolve).
func (p Plugin) Offloads() bool { return p.CPUOffload != nil && *p.CPUOffload }

func (p Plugin) String() string {
	s := fmt.Sprintf("FullyShardedDataParallelPlugin(fsdp_version=%d, sharding_strategy=%v, state_dict_type=%v, cpu_offload=%v",
		p.Version, p.ShardingStrategy, p.StateDictType, p.Offloads())
	if mp := p.MixedPrecisionPolicy; mp != nil {
		s += fmt.Sprintf(", mixed_precision_policy=MixedPrecision(param_dtype=%s, reduce_dtype=%s)", orDefault(mp.ParamDType), orDefault(mp.ReduceDType))
	}
	return s + ")"
}

func orDefault(dtype string) string {
	if dtype == "" {
		return "None"
	}
	return dtype
}

// Env is the environment that carries a resolved plugin to launched
// processes, as `accelerate launch --use_fsdp` sets it.
func (p Plugin) Env() map[string]string {
	env := map[string]string{
		EnvUseFSDP:       "true",
		EnvVersion:       strconv.Itoa(p.Version),
		EnvStateDictType: p.StateDictType.String(),
		EnvOffloadParams: strconv.FormatBool(p.Offloads()),
	}
	if p.Version == 2 {
		env[EnvReshardAfterForward] = strconv.FormatBool(p.ShardingStrategy == FullShard)
	} else {
		env[EnvShardingStrategy] = p.ShardingStrategy.String()
	}
	if p.ActivationCheckpointing != nil {
		env[EnvActivationCheckpointing] = strconv.FormatBool(*p.ActivationCheckpointing)
	}
	if p.CPURAMEfficientLoading != nil {
		env[EnvCPURAMEfficientLoading] = strconv.FormatBool(*p.CPURAMEfficientLoading)
	}
	return env
}
