package cli

import (
	"context"
	"flag"
	"testing"
)

// In a Slurm step, goaccel node runs a worker per GPU of its node and names
// itself by its node's address, unless the flags say otherwise.
func TestNodeTakesWhatTheFlagsLeaveFromSlurm(t *testing.T) {
	env := map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "localhost,n2",
		"SLURM_NODEID": "0", "SLURM_GPUS_ON_NODE": "4", "SLURMD_NODENAME": "localhost"}
	for _, tc := range []struct {
		args  []string
		env   map[string]string
		nproc int
		host  string
	}{
		{nil, env, 4, "localhost"},
		{[]string{"--nproc-per-node", "2", "--host", "10.0.0.7"}, env, 2, "10.0.0.7"},
		{nil, map[string]string{}, 0, ""}, // outside Slurm: nothing changes
	} {
		fs := flag.NewFlagSet("node", flag.ContinueOnError)
		nproc := fs.Int("nproc-per-node", 0, "")
		host := fs.String("host", "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := nodeFromSlurm(context.Background(), fs, nproc, host, func(k string) string { return tc.env[k] }); err != nil {
			t.Fatal(err)
		}
		if *nproc != tc.nproc || *host != tc.host {
			t.Errorf("%v: nproc %d, host %q; want %d, %q", tc.args, *nproc, *host, tc.nproc, tc.host)
		}
	}
}
