package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// HYBRID_SHARD's groups on 2 nodes of 2: each node's pair and each local
// rank's pair run collectives between the group's own, over its
// connections: a hierarchical all-reduce (reduce-scatter in the node, the
// share all-reduced across nodes, all-gathered in the node) gives the
// group's all-reduce, and the group still works after.
func TestSubGroupsReduceHierarchically(t *testing.T) {
	groups := joinAll(t, 4)
	ctx := context.Background()
	const n = 1 << 12
	values := func(r int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((r+1)*1000 + i%97)
		}
		return v
	}
	mustAll(t, onAll(groups, func(r int, g *Group) error {
		node, err := g.Sub([]int{r / 2 * 2, r/2*2 + 1})
		if err != nil {
			return err
		}
		replicas, err := g.Sub([]int{r % 2, r%2 + 2})
		if err != nil {
			return err
		}
		if node.Size() != 2 || node.Rank() != r%2 || replicas.Rank() != r/2 || fmt.Sprint(replicas.Ranks()) != fmt.Sprint([]int{r % 2, r%2 + 2}) {
			return fmt.Errorf("node %d/%d, replicas %d/%d %v", node.Rank(), node.Size(), replicas.Rank(), replicas.Size(), replicas.Ranks())
		}
		want := values(r)
		if err := g.AllReduceFloat32(ctx, want, Sum); err != nil {
			return err
		}
		for round := range 2 { // twice: the sub-groups' and the group's sequence numbers interleave
			buf := values(r)
			share, err := node.ReduceScatterInPlaceFloat32(ctx, buf, Sum)
			if err != nil {
				return err
			}
			mine := append([]float32(nil), share...)
			if err := replicas.AllReduceFloat32(ctx, mine, Sum); err != nil {
				return err
			}
			got := make([]float32, n)
			if err := node.AllGatherFloat32(ctx, got, mine); err != nil {
				return err
			}
			for i := range got {
				if got[i] != want[i] {
					return fmt.Errorf("round %d: value %d is %v, the group's all-reduce gives %v", round, i, got[i], want[i])
				}
			}
			if err := g.Barrier(ctx); err != nil {
				return fmt.Errorf("the group after its sub-groups: %w", err)
			}
		}
		return nil
	}))
}

// A collective mismatch inside a sub-group names the ranks of the group
// (the ones a launch's error shows), not their indices in the sub-group;
// it breaks the group too, whose connections it shares.
func TestSubGroupErrorsNameGroupRanks(t *testing.T) {
	groups := joinAll(t, 4)
	ctx := context.Background()
	errs := onAll(groups, func(r int, g *Group) error {
		if r < 2 {
			return nil
		}
		sub, err := g.Sub([]int{2, 3})
		if err != nil {
			return err
		}
		buf := make([]float32, 8+r) // rank 3 gives another length
		if err := sub.AllReduceFloat32(ctx, buf, Sum); err != nil {
			return err
		}
		return g.Barrier(ctx)
	})
	for r := 2; r < 4; r++ {
		if errs[r] == nil {
			t.Fatalf("rank %d: the mismatched all-reduce succeeded", r)
		}
		msg := errs[r].Error()
		if !errors.Is(errs[r], ErrMismatch) || !strings.Contains(msg, "rank 2") && !strings.Contains(msg, "rank 3") || strings.Contains(msg, "rank 0 ") || strings.Contains(msg, "rank 1 ") {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
	if err := groups[2].Barrier(ctx); err == nil || !strings.Contains(err.Error(), "unusable after an earlier failure") {
		t.Errorf("the group after its sub-group failed: %v", err)
	}
}

// Bad ranks are refused, naming the problem.
func TestSubRefusesBadRanks(t *testing.T) {
	groups := joinAll(t, 2)
	g := groups[0]
	for _, c := range []struct {
		ranks []int
		want  string
	}{
		{nil, "no ranks"},
		{[]int{0, 2}, "rank 2 is not in a group of 2"},
		{[]int{1, 0}, "increasing order"},
		{[]int{0, 0}, "increasing order"},
		{[]int{1}, "this process (rank 0) is not one of the ranks"},
	} {
		if _, err := g.Sub(c.ranks); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Sub(%v): %v, want %q", c.ranks, err, c.want)
		}
	}
	if sub, err := g.Sub([]int{0}); err != nil || sub.Size() != 1 || sub.Close() != nil {
		t.Fatalf("a sub-group of one: %v", err)
	}
	mustAll(t, onAll(groups, func(_ int, g *Group) error { return g.Barrier(context.Background()) })) // closing it left the connections open
}
