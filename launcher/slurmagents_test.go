package launcher

import (
	"context"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/frontend"
)

type discardPublisher struct{ frontend.Publisher }

func (discardPublisher) Stream(string, string) {}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The Slurm path's refusals and pass-throughs; the launch itself runs on a
// real Slurm in e2e/test_slurm.py.
func TestSlurmAllocationIsUsedOnlyWhereItCanBe(t *testing.T) {
	job := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "n[1-2]"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range job {
			m[a] = b
		}
		m[k] = v
		return m
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
		env  map[string]string
		err  string
	}{
		{"outside Slurm", Options{}, map[string]string{}, ""},
		{"one node", Options{}, map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1"}, ""},
		{"NumNodes given", Options{NumNodes: 1}, with("SLURMD_NODENAME", "n1"), ""},
		{"RdzvEndpoint given", Options{RdzvEndpoint: "h:1"}, with("SLURMD_NODENAME", "n1"), ""},
		{"salloc's shell", Options{}, job, "runs on none of them (SLURMD_NODENAME is unset"},
		{"another node", Options{}, with("SLURMD_NODENAME", "login1"), "this node, login1, is not one of Slurm job 7's nodes (n1,n2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, agents, err := fromSlurmAllocation(ctx, tc.opts, envOf(tc.env), discardPublisher{})
			if agents != nil {
				agents.stop()
				t.Fatal("agents started")
			}
			if tc.err == "" {
				if err != nil || got.NumNodes != tc.opts.NumNodes || got.RdzvEndpoint != tc.opts.RdzvEndpoint {
					t.Fatalf("got %+v, %v: want the options unchanged", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
