package slurm

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlistAsScontrol(t *testing.T) {
	for list, want := range map[string][]string{
		"n1":                  {"n1"},
		"n[1-3]":              {"n1", "n2", "n3"},
		"node[01-03,07],gpu5": {"node01", "node02", "node03", "node07", "gpu5"},
		"a[9-11]":             {"a9", "a10", "a11"},
		"r[1-2]-n[1-2]":       {"r1-n1", "r1-n2", "r2-n1", "r2-n2"},
		"x,y":                 {"x", "y"},
	} {
		got, err := ExpandHostlist(list)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v %v, want %v", list, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n]1", "n[3-1]", "n[a-b]", "n[1-]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	if _, ok, err := FromEnv(env(nil)); ok || err != nil {
		t.Errorf("outside a job: %v %v", ok, err)
	}
	a, ok, err := FromEnv(env(map[string]string{"SLURM_JOB_ID": "42", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1",
		"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NTASKS": "2", "SLURM_GPUS_ON_NODE": "4"}))
	if !ok || err != nil || a.Nodes != 2 || a.NodeRank != 1 || a.Head() != "n1" || a.Tasks != 2 || a.GPUs != 4 {
		t.Errorf("%+v %v %v", a, ok, err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_NUM_NODES": "two"}, `SLURM_JOB_NUM_NODES="two" is not a number`},
		{map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "n[1-3]"}, "names 3 nodes but SLURM_JOB_NUM_NODES is 2"},
		{map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NODEID": "2"}, "SLURM_NODEID 2 is outside the job's 2 nodes"},
		{map[string]string{"SLURM_JOB_ID": "1"}, "neither SLURM_JOB_NUM_NODES nor SLURM_JOB_NODELIST"},
	} {
		if _, _, err := FromEnv(env(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
}
