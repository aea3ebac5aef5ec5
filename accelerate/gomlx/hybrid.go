package gomlx

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/accelerate/pg"
)

// FSDP's hybrid strategies (HYBRID_SHARD: FULL_SHARD within each node,
// HYBRID_SHARD_ZERO2: SHARD_GRAD_OP within each node) shard the training
// state among the processes of a node, and every node holds the same
// shares: the gradients are reduce-scattered within the node, each share
// is averaged with the same share on the other nodes (an all-reduce among
// the processes of the same local rank), and the parameters are gathered
// within the node. Only the all-reduce of one share crosses nodes; each
// process holds 1/(processes per node) of the state. Checkpoints are
// written from the first node's shares (the others are copies).

// shardGroups returns the group that shards the parameters and, with the
// hybrid strategies, the group of this share's replicas: sub-groups of the
// Accelerator's group, the ranks numbered node by node as the launchers
// number them (rank = node·L + local rank).
func (t *Trainer) shardGroups() (shards, replicas *pg.Group, err error) {
	g := t.acc.Group()
	if g == nil {
		return nil, nil, errors.New("gomlx: FSDP: the Accelerator has no process group")
	}
	p := t.acc.FSDPPlugin()
	if p == nil || !p.ShardingStrategy.Hybrid() {
		return g, nil, nil
	}
	local, rank, world := t.acc.LocalNumProcesses(), g.Rank(), g.Size()
	if local < 1 || world%local != 0 || rank%local != t.acc.LocalProcessIndex() {
		return nil, nil, fmt.Errorf("gomlx: FSDP's %v: rank %d is local rank %d of %d processes per node, in a group of %d: "+
			"it needs the same number of processes on every node, numbered node by node", p.ShardingStrategy, rank, t.acc.LocalProcessIndex(), local, world)
	}
	node, mine := make([]int, local), make([]int, world/local)
	for i := range node {
		node[i] = rank/local*local + i
	}
	for i := range mine {
		mine[i] = rank%local + i*local
	}
	if shards, err = g.Sub(node); err != nil {
		return nil, nil, fmt.Errorf("gomlx: FSDP: the node's group: %w", err)
	}
	if replicas, err = g.Sub(mine); err != nil {
		return nil, nil, fmt.Errorf("gomlx: FSDP: the group of the share's replicas: %w", err)
	}
	return shards, replicas, nil
}

// writesShares reports whether this process's shares go into checkpoints:
// with the hybrid strategies only the first node's do.
func (l *shardLayout) writesShares() bool { return l.replicas == nil || l.replicas.Rank() == 0 }
