package fsdp

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaultsAreAccelerates(t *testing.T) {
	p, err := Plugin{}.Resolve(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.ShardingStrategy != FullShard || p.StateDictType != FullStateDict || p.Offloads() {
		t.Errorf("defaults %v", p)
	}
	p, err = Plugin{Version: 2}.Resolve(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.ShardingStrategy != FullShard || p.StateDictType != ShardedStateDict || !*p.ReshardAfterForward {
		t.Errorf("FSDP2 defaults %v", p)
	}
}

func TestEnvironmentFillsUnsetFields(t *testing.T) {
	e := env(map[string]string{EnvShardingStrategy: "shard_grad_op", EnvStateDictType: "3", EnvOffloadParams: "True"})
	p, err := Plugin{}.Resolve(e)
	if err != nil {
		t.Fatal(err)
	}
	if p.ShardingStrategy != ShardGradOp || p.StateDictType != ShardedStateDict || !p.Offloads() {
		t.Errorf("from the environment: %v", p)
	}
	// A field set in the plugin wins over the environment.
	p, err = Plugin{ShardingStrategy: NoShard}.Resolve(e)
	if err != nil || p.ShardingStrategy != NoShard {
		t.Errorf("plugin's field: %v, %v", p, err)
	}
	// Numbers as torch's enum values.
	p, err = Plugin{}.Resolve(env(map[string]string{EnvShardingStrategy: "4"}))
	if err != nil || p.ShardingStrategy != HybridShard {
		t.Errorf("FSDP_SHARDING_STRATEGY=4: %v, %v", p, err)
	}
	// FSDP2: reshard_after_forward false is SHARD_GRAD_OP.
	p, err = Plugin{}.Resolve(env(map[string]string{EnvVersion: "2", EnvReshardAfterForward: "false"}))
	if err != nil || p.ShardingStrategy != ShardGradOp {
		t.Errorf("FSDP2 reshard false: %v, %v", p, err)
	}
	// A resolved plugin resolves to itself.
	if again, err := p.Resolve(env(nil)); err != nil || again.String() != p.String() {
		t.Errorf("resolving %v again: %v, %v", p, again, err)
	}
	// The environment round-trips.
	back, err := Plugin{}.Resolve(env(p.Env()))
	if err != nil || back.String() != p.String() {
		t.Errorf("Env round trip: %v → %v (%v)", p, back, err)
	}
}

func TestBadInputIsNamed(t *testing.T) {
	for _, c := range []struct {
		p    Plugin
		env  map[string]string
		want string
	}{
		{Plugin{}, map[string]string{EnvShardingStrategy: "SHARD_EVERYTHING"}, `unknown sharding strategy "SHARD_EVERYTHING": choose between FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or their numbers 1-5) (from FSDP_SHARDING_STRATEGY)`},
		{Plugin{}, map[string]string{EnvShardingStrategy: "6"}, `unknown sharding strategy "6"`},
		{Plugin{ShardingStrategy: 9}, nil, "ShardingStrategy(9) is not a sharding strategy"},
		{Plugin{}, map[string]string{EnvStateDictType: "FULL"}, `unknown state dict type "FULL"`},
		{Plugin{}, map[string]string{EnvOffloadParams: "maybe"}, `FSDP_OFFLOAD_PARAMS="maybe": invalid truth value`},
		{Plugin{}, map[string]string{EnvVersion: "3"}, "FSDP version 3: want 1 or 2"},
		{Plugin{Version: 2, ShardingStrategy: ShardGradOp}, nil, "FSDP version 2 has no sharding strategy"},
	} {
		_, err := c.p.Resolve(env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: %v, want %q", c.p, c.env, err, c.want)
		}
	}
	if _, err := Enabled(env(map[string]string{EnvUseFSDP: "perhaps"})); err == nil || !strings.Contains(err.Error(), "ACCELERATE_USE_FSDP") {
		t.Errorf("ACCELERATE_USE_FSDP=perhaps: %v", err)
	}
	if on, err := Enabled(env(map[string]string{EnvUseFSDP: "true"})); !on || err != nil {
		t.Errorf("ACCELERATE_USE_FSDP=true: %v %v", on, err)
	}
}

func TestHybridNeedsNodes(t *testing.T) {
	p := Plugin{ShardingStrategy: HybridShard}
	if err := p.Check(4, 1); err == nil || !strings.Contains(err.Error(), "HYBRID_SHARD shards inside each node and replicates across nodes, but this group of 4 processes runs on one node: use FULL_SHARD") {
		t.Errorf("one node: %v", err)
	}
	if err := p.Check(4, 2); err != nil {
		t.Errorf("two nodes: %v", err)
	}
	if err := (Plugin{ShardingStrategy: HybridShardZero2}).Check(3, 2); err == nil {
		t.Error("3 processes on 2 nodes accepted")
	}
}

// The mixed-precision policy's dtypes are read in Accelerate's spellings
// and refused, naming the field, when unknown.
func TestMixedPrecisionPolicy(t *testing.T) {
	p, err := Plugin{MixedPrecisionPolicy: &MixedPrecisionPolicy{ParamDType: "torch.bfloat16", ReduceDType: "FP32"}}.Resolve(env(nil))
	if err != nil || *p.MixedPrecisionPolicy != (MixedPrecisionPolicy{ParamDType: "bfloat16", ReduceDType: "float32"}) {
		t.Fatalf("%v, %v", p.MixedPrecisionPolicy, err)
	}
	if s := p.String(); !strings.Contains(s, "mixed_precision_policy=MixedPrecision(param_dtype=bfloat16, reduce_dtype=float32)") {
		t.Errorf("String: %s", s)
	}
	_, err = Plugin{MixedPrecisionPolicy: &MixedPrecisionPolicy{ReduceDType: "int8"}}.Resolve(env(nil))
	if err == nil || !strings.Contains(err.Error(), `unknown dtype "int8"`) || !strings.Contains(err.Error(), "MixedPrecisionPolicy.ReduceDType") {
		t.Errorf("int8: %v", err)
	}
}
