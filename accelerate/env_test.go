package accelerate

import (
	"strings"
	"testing"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func multiEnv(extra map[string]string) map[string]string {
	m := map[string]string{
		EnvWorldSize: "4", EnvRank: "3", EnvLocalRank: "1", EnvLocalWorldSize: "2",
		EnvNodeRank: "1", EnvGroupRank: "1", EnvMasterAddr: "10.0.0.1", EnvMasterPort: "29500",
		EnvLaunchSecret: "s3cret", EnvRestartCount: "2", EnvMaxRestarts: "3",
	}
	for k, v := range extra {
		if v == "\x00" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func TestReadEnv(t *testing.T) {
	e, err := readEnv(envMap(nil))
	if err != nil || e.worldSize != 1 || e.rank != 0 || e.localRank != 0 || e.localWorldSize != 1 || e.cudaVisible != nil || e.rdzvBackend != "static" {
		t.Fatalf("empty env: %+v, %v", e, err)
	}
	e, err = readEnv(envMap(multiEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if e.worldSize != 4 || e.rank != 3 || e.localRank != 1 || e.localWorldSize != 2 || e.nodeRank != 1 || e.groupRank != 1 ||
		e.restartCount != 2 || e.maxRestarts != 3 || e.storeAddr != "10.0.0.1:29500" || e.secret != "s3cret" {
		t.Fatalf("multi env: %+v", e)
	}
	e, err = readEnv(envMap(multiEnv(map[string]string{EnvRdzvBackend: "C10D", EnvRdzvEndpoint: "host:1234", EnvMasterAddr: "\x00"})))
	if err != nil || e.rdzvBackend != "c10d" || e.storeAddr != "host:1234" {
		t.Fatalf("c10d env: %+v, %v", e, err)
	}
	if e.namespace != "/restart2" {
		t.Errorf("default namespace %q", e.namespace)
	}
	// etcd: the nodes met in etcd; the store is node 0's, as with static.
	e, err = readEnv(envMap(multiEnv(map[string]string{EnvRdzvBackend: "etcd", EnvRdzvEndpoint: "10.0.0.1:4000", EnvRdzvNamespace: "job/abc/run-1"})))
	if err != nil || e.rdzvBackend != "etcd" || e.storeAddr != "10.0.0.1:4000" || e.namespace != "job/abc/run-1" {
		t.Fatalf("etcd env: %+v, %v", e, err)
	}
	e, err = readEnv(envMap(map[string]string{EnvWorldSize: "2", EnvRank: "1", EnvMasterAddr: "::1", EnvMasterPort: "5", EnvLaunchSecret: "x"}))
	if err != nil || e.localRank != 1 || e.localWorldSize != 2 || e.storeAddr != "[::1]:5" {
		t.Fatalf("defaults: %+v, %v", e, err)
	}

	bad := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvWorldSize: "two"}, `invalid WORLD_SIZE="two"`},
		{map[string]string{EnvWorldSize: "0"}, `invalid WORLD_SIZE="0": want an integer >= 1`},
		{map[string]string{EnvWorldSize: "2"}, "WORLD_SIZE=2 but RANK is not set"},
		{multiEnv(map[string]string{EnvRank: "4"}), "RANK=4 is out of range for WORLD_SIZE=4"},
		{multiEnv(map[string]string{EnvRank: "-1"}), `invalid RANK="-1"`},
		{multiEnv(map[string]string{EnvLocalRank: "2"}), "LOCAL_RANK=2 is out of range for LOCAL_WORLD_SIZE=2"},
		{multiEnv(map[string]string{EnvLocalWorldSize: "8"}), "LOCAL_WORLD_SIZE=8 exceeds WORLD_SIZE=4"},
		{multiEnv(map[string]string{EnvMasterPort: "\x00"}), "needs MASTER_ADDR and MASTER_PORT"},
		{multiEnv(map[string]string{EnvMasterPort: "0"}), "non-zero port"},
		{multiEnv(map[string]string{EnvLaunchSecret: ""}), "GOACCEL_LAUNCH_SECRET is not set"},
		{multiEnv(map[string]string{EnvRdzvBackend: "zookeeper"}), `unsupported GOACCEL_RDZV_BACKEND="zookeeper": choose between static, c10d and etcd`},
		{multiEnv(map[string]string{EnvRdzvBackend: "c10d"}), "c10d needs GOACCEL_RDZV_ENDPOINT"},
		{multiEnv(map[string]string{EnvUseCPU: "maybe"}), `invalid ACCELERATE_USE_CPU: invalid truth value "maybe"`},
		{multiEnv(map[string]string{EnvRestartCount: "x"}), "TORCHELASTIC_RESTART_COUNT"},
	}
	for _, c := range bad {
		_, err := readEnv(envMap(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("env %v: err = %v, want %q", c.env, err, c.want)
		}
	}
}

func TestParseVisibleDevices(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"0":               "0",
		"2,3":             "2|3",
		" 1 , 0 ":         "1|0",
		"-1":              "",
		"0,-1,2":          "0",
		"GPU-abc,MIG-def": "GPU-abc|MIG-def",
		"0,foo,1":         "0",
	} {
		if got := strings.Join(parseVisibleDevices(in), "|"); got != want {
			t.Errorf("parseVisibleDevices(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStrToBool(t *testing.T) {
	for _, v := range []string{"y", "YES", "t", "True", "on", "1"} {
		if b, err := strToBool(v); !b || err != nil {
			t.Errorf("%q: %v %v", v, b, err)
		}
	}
	for _, v := range []string{"n", "No", "f", "false", "OFF", "0"} {
		if b, err := strToBool(v); b || err != nil {
			t.Errorf("%q: %v %v", v, b, err)
		}
	}
	if _, err := strToBool("2"); err == nil {
		t.Error("2 accepted")
	}
}
