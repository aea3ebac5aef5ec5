package pg

import (
	"fmt"
	"slices"
)

// Sub returns the group of the given ranks of g (torch.distributed's
// new_group), which must include this rank: its ranks are their indices in
// ranks, and its collectives run over g's connections, so nothing is
// exchanged to make it. Every rank of ranks must make the same sub-group,
// and call its collectives in the same order; a rank outside it does not
// call them. HYBRID_SHARD's groups are Subs: the processes of a node, and
// the processes with the same local rank on every node.
//
// A sub-group's collectives and its parent's are serialized (they share
// the connections); a failure in either breaks both. Closing a sub-group
// leaves its parent's connections open; closing the parent fails the
// sub-group's collectives.
func (g *Group) Sub(ranks []int) (*Group, error) {
	if len(ranks) == 0 {
		return nil, fmt.Errorf("pg: Sub: no ranks")
	}
	me := -1
	for i, r := range ranks {
		switch {
		case r < 0 || r >= g.size:
			return nil, fmt.Errorf("pg: Sub(%v): rank %d is not in a group of %d", ranks, r, g.size)
		case i > 0 && r <= ranks[i-1]:
			return nil, fmt.Errorf("pg: Sub(%v): the ranks must be given in increasing order, each once", ranks)
		case r == g.rank:
			me = i
		}
	}
	if me < 0 {
		return nil, fmt.Errorf("pg: Sub(%v): this process (rank %d) is not one of the ranks", ranks, g.rank)
	}
	owner := g.owner()
	sub := &Group{rank: me, size: len(ranks), log: g.log.WithField("group", ranks), timeout: g.Timeout(),
		peers: make([]*peer, len(ranks)), parent: owner, global: make([]int, len(ranks))}
	for i, r := range ranks {
		sub.global[i] = g.globalRank(r)
		if p := g.peers[r]; p != nil {
			sub.peers[i] = &peer{rank: i, conn: p.conn, r: p.r}
		}
	}
	return sub, nil
}

// owner is the group that owns the connections: g, or the group g is a
// sub-group of.
func (g *Group) owner() *Group {
	if g.parent != nil {
		return g.parent
	}
	return g
}

// globalRank is the rank of g's rank r in the group that owns the
// connections, the rank errors name.
func (g *Group) globalRank(r int) int {
	if g.global == nil || r < 0 || r >= len(g.global) {
		return r
	}
	return g.global[r]
}

// Ranks lists the ranks of g in the group that owns the connections (0 to
// Size()-1 for a group made by Join).
func (g *Group) Ranks() []int {
	if g.global == nil {
		out := make([]int, g.size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return slices.Clone(g.global)
}
