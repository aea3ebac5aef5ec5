package launcher

import "testing"

// What explains a failed launch best, when several reports arrive: a lost
// node, then a rank's own failure, then a node's second-hand report of its
// failure (it races with its agent's report of the rank, which must win:
// TestRankFailureOnAgentNamesRankAndNode lost that race now and then), then
// a rank that failed because a peer did.
func TestFailurePriorityOrdersRootCauses(t *testing.T) {
	lost := &NodeFailedError{NodeRank: 1, Lost: true}
	own := &ChildFailedError{Rank: 3, Panic: "rank 3 gives up"}
	reported := &NodeFailedError{NodeRank: 1, Reason: "launcher: rank 3 (local rank 1 on node 1) failed"}
	collateral := &ChildFailedError{Rank: 0, Message: "pg: rank 3 closed the connection"}
	order := []groupFailure{lost, own, reported, collateral}
	for i := 1; i < len(order); i++ {
		if a, b := failurePriority(order[i-1]), failurePriority(order[i]); a <= b {
			t.Errorf("%v (%d) does not outrank %v (%d)", order[i-1], a, order[i], b)
		}
	}
}
