// Package slurm reads a Slurm allocation from the environment srun and
// sbatch give a task (SLURM_*): how many nodes, which one this is, the head
// node (the first of SLURM_JOB_NODELIST, a compressed hostlist expanded
// here as `scontrol show hostnames` would) and the GPUs on this node, so
// that `srun goaccel launch PROG` needs no other flag.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// Allocation is what a task of a Slurm job knows of its job.
type Allocation struct {
	JobID string
	// Nodes is the number of nodes, NodeRank this node's index among them
	// (SLURM_NODEID), Hosts their names in order.
	Nodes, NodeRank int
	Hosts           []string
	// Tasks is the number of tasks of the step (SLURM_NTASKS), 0 when
	// unknown.
	Tasks int
	// GPUs is the number of GPUs on this node (SLURM_GPUS_ON_NODE), 0
	// when none or unknown.
	GPUs int
}

// FromEnv reads the allocation from getenv; ok is false outside a Slurm
// job (no SLURM_JOB_ID).
func FromEnv(getenv func(string) string) (a Allocation, ok bool, err error) {
	a.JobID = getenv("SLURM_JOB_ID")
	if a.JobID == "" {
		return a, false, nil
	}
	num := func(names ...string) (int, error) {
		for _, n := range names {
			if v := getenv(n); v != "" {
				i, err := strconv.Atoi(v)
				if err != nil {
					return 0, fmt.Errorf("slurm: %s=%q is not a number", n, v)
				}
				return i, nil
			}
		}
		return 0, nil
	}
	if a.Nodes, err = num("SLURM_JOB_NUM_NODES", "SLURM_NNODES"); err != nil {
		return a, true, err
	}
	if a.NodeRank, err = num("SLURM_NODEID"); err != nil {
		return a, true, err
	}
	if a.Tasks, err = num("SLURM_NTASKS", "SLURM_NPROCS"); err != nil {
		return a, true, err
	}
	if a.GPUs, err = num("SLURM_GPUS_ON_NODE"); err != nil {
		return a, true, err
	}
	list := getenv("SLURM_JOB_NODELIST")
	if list == "" {
		list = getenv("SLURM_NODELIST")
	}
	if a.Hosts, err = ExpandHostlist(list); err != nil {
		return a, true, err
	}
	if a.Nodes == 0 {
		a.Nodes = len(a.Hosts)
	}
	if a.Nodes == 0 {
		return a, true, errors.New("slurm: SLURM_JOB_ID is set but neither SLURM_JOB_NUM_NODES nor SLURM_JOB_NODELIST says which nodes the job has")
	}
	if len(a.Hosts) != 0 && len(a.Hosts) != a.Nodes {
		return a, true, fmt.Errorf("slurm: SLURM_JOB_NODELIST names %d nodes but SLURM_JOB_NUM_NODES is %d", len(a.Hosts), a.Nodes)
	}
	if a.NodeRank < 0 || a.NodeRank >= a.Nodes {
		return a, true, fmt.Errorf("slurm: SLURM_NODEID %d is outside the job's %d nodes", a.NodeRank, a.Nodes)
	}
	return a, true, nil
}

// Head is the first node's name, where rank 0's machine is.
func (a Allocation) Head() string {
	if len(a.Hosts) == 0 {
		return ""
	}
	return a.Hosts[0]
}

// HeadAddress is an address of the head node: its name when the name
// resolves, else the NodeAddr Slurm's configuration gives it (`scontrol
// show node`; test clusters name nodes that do not resolve).
func (a Allocation) HeadAddress(ctx context.Context) (string, error) {
	head := a.Head()
	if head == "" {
		return "", errors.New("slurm: the job's node list is empty")
	}
	return NodeAddress(ctx, head)
}

// NodeAddress is an address of the node named name: the name when it
// resolves, else its NodeAddr in Slurm's configuration.
func NodeAddress(ctx context.Context, name string) (string, error) {
	if _, err := net.DefaultResolver.LookupHost(ctx, name); err == nil {
		return name, nil
	}
	out, err := exec.CommandContext(ctx, "scontrol", "show", "node", name).Output()
	if err != nil {
		return "", fmt.Errorf("slurm: node %q does not resolve, and scontrol show node %s failed: %w", name, name, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "NodeAddr="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("slurm: node %q does not resolve, and scontrol gives it no NodeAddr", name)
}

// ExpandHostlist expands a Slurm hostlist ("n[01-03,7],gpu5") into its
// names in order, keeping zero padding, as `scontrol show hostnames`.
func ExpandHostlist(list string) ([]string, error) {
	var out []string
	for _, item := range splitTop(list) {
		if item == "" {
			continue
		}
		names, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("slurm: hostlist %q: %w", list, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at the commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one name with bracketed ranges (several brackets
// multiply: rack[1-2]-n[1-2]).
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("unbalanced ] in %q", item)
		}
		return []string{item}, nil
	}
	closeAt := strings.IndexByte(item[open:], ']')
	if closeAt < 0 {
		return nil, fmt.Errorf("unbalanced [ in %q", item)
	}
	closeAt += open
	prefix, ranges, rest := item[:open], item[open+1:closeAt], item[closeAt+1:]
	tails, err := expandItem(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if lo == "" || hi == "" || err1 != nil || err2 != nil || a > b || a < 0 {
			return nil, fmt.Errorf("bad range %q", r)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("range %q is too long", r)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; n <= b; n++ {
			s := strconv.Itoa(n)
			for len(s) < width {
				s = "0" + s
			}
			for _, t := range tails {
				out = append(out, prefix+s+t)
			}
		}
	}
	return out, nil
}
