// Package vjp gives GoMLX's matrix products gradients that are matrix
// products.
//
// GoMLX v0.26.0 differentiates Dot and DotGeneral by broadcasting the
// output's gradient against the other operand into a tensor holding every
// term of the product, multiplying elementwise and summing the crossed
// axes away: a Dense layer of a batch of 768 rows from 512 to 128 features
// gets, for its weights' gradient, a 768×512×128 tensor that XLA reduces
// with a loop instead of a matrix multiply. On a small GPT that made every
// training step 15–25× slower than the same model in JAX on the same XLA
// plugin (bench/gpt). The gradients here are the textbook ones, each one
// DotGeneral (and a transpose where the axes come out in another order):
//
//	out = lhs · rhs  ⇒  dlhs = dout · rhsᵀ,  drhs = lhsᵀ · dout
//
// generalized to DotGeneral's batch, contracting and free axes. They are
// exact up to the order of float additions.
//
// It also gives Rsqrt (1/√x, what a layer normalization multiplies by) the
// gradient v0.26.0 lacks: −½·v·x^(−3/2), computed from the output y as
// −½·v·y³.
//
// Install puts them in GoMLX's table of gradients (graph.VJPRegistration,
// which GoMLX documents as the place to change a gradient); Restore puts
// GoMLX's own back. goaccel's GoMLX adapter (accelerate/gomlx) installs
// them when it is imported, in a cell and in a program alike, so a
// notebook and `go run` of the same code compute the same gradients; a
// program that uses GoMLX alone gets them with a blank import of this
// package.
//
// DotGeneral's axes are not exported by GoMLX's Node: they are read from
// its inputs with reflection, by the field names of v0.26.0. Where they
// cannot be read (another GoMLX version that renamed them), the node keeps
// GoMLX's own gradient.
package vjp

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's graph API reads best dot-imported
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

var (
	mu       sync.Mutex
	original map[NodeType]VJP // GoMLX's gradients this package replaced
	// gomlxRsqrt is GoMLX's own gradient of Rsqrt, which v0.26.0 does not
	// have (a test watches for a GoMLX that adds one).
	gomlxRsqrt = VJPRegistration[NodeTypeRsqrt]
)

func init() { Install() }

// Install replaces GoMLX's gradients of Dot and DotGeneral with this
// package's, and adds Rsqrt's. It is idempotent, and must not run while a graph's gradient
// is being built (package inits and set-up code are the places).
func Install() {
	mu.Lock()
	defer mu.Unlock()
	if original != nil {
		return
	}
	original = map[NodeType]VJP{
		NodeTypeDotGeneral: VJPRegistration[NodeTypeDotGeneral],
		NodeTypeDot:        VJPRegistration[NodeTypeDot],
		NodeTypeRsqrt:      VJPRegistration[NodeTypeRsqrt],
	}
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralVJP
	VJPRegistration[NodeTypeDot] = dotVJP
	VJPRegistration[NodeTypeRsqrt] = rsqrtVJP
}

// Restore puts GoMLX's own gradients back where it has them (benchmarks
// compare the two); the ones it lacks (Rsqrt's) stay.
func Restore() {
	mu.Lock()
	defer mu.Unlock()
	for t, f := range original {
		if f != nil {
			VJPRegistration[t] = f
		}
	}
	original = nil
}

// Installed reports whether this package's gradients are in place.
func Installed() bool {
	mu.Lock()
	defer mu.Unlock()
	return original != nil
}

// fallback is GoMLX's own gradient of a node type.
func fallback(t NodeType) VJP {
	mu.Lock()
	defer mu.Unlock()
	if f := original[t]; f != nil {
		return f
	}
	return VJPRegistration[t]
}

// dotAxes are a DotGeneral node's axes.
type dotAxes struct {
	lhsContracting, lhsBatch, rhsContracting, rhsBatch []int
}

// readDotAxes reads a DotGeneral node's axes from its (unexported) inputs.
func readDotAxes(node *Node) (a dotAxes, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading DotGeneral's axes: %v", r)
		}
	}()
	in := reflect.ValueOf(node).Elem().FieldByName("inputs")
	if !in.IsValid() || in.Kind() != reflect.Interface || in.IsNil() {
		return a, fmt.Errorf("the node has no inputs field")
	}
	s := in.Elem()
	if s.Kind() == reflect.Pointer {
		s = s.Elem()
	}
	if s.Kind() != reflect.Struct {
		return a, fmt.Errorf("the node's inputs are a %s", s.Kind())
	}
	ints := func(name string) ([]int, error) {
		f := s.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
			return nil, fmt.Errorf("no []int field %s", name)
		}
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out, nil
	}
	if a.lhsContracting, err = ints("lhsContractingAxes"); err != nil {
		return a, err
	}
	if a.lhsBatch, err = ints("lhsBatchAxes"); err != nil {
		return a, err
	}
	if a.rhsContracting, err = ints("rhsContractingAxes"); err != nil {
		return a, err
	}
	if a.rhsBatch, err = ints("rhsBatchAxes"); err != nil {
		return a, err
	}
	if len(a.lhsContracting) != len(a.rhsContracting) || len(a.lhsBatch) != len(a.rhsBatch) {
		return a, fmt.Errorf("unpaired axes %+v", a)
	}
	return a, nil
}

// freeAxes lists the axes of a rank-rank operand that are neither
// contracted nor batch, in order: DotGeneral's output has them after the
// batch axes (the lhs's, then the rhs's).
func freeAxes(rank int, contracting, batch []int) []int {
	var out []int
	for a := range rank {
		if !slices.Contains(contracting, a) && !slices.Contains(batch, a) {
			out = append(out, a)
		}
	}
	return out
}

func count(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// operand describes one side of a DotGeneral: its axes, and where its free
// axes are in the output.
type operand struct {
	node                     *Node
	contracting, batch, free []int
	outFree                  []int // positions of free in the output
}

// dotGeneralVJP is the gradient of out = DotGeneral(lhs, rhs): each
// operand's is a DotGeneral of the output's gradient v with the other
// operand, contracting v's axes that came from the other's free axes.
func dotGeneralVJP(node *Node, vs []*Node, outShape shapes.Shape) []*Node {
	axes, err := readDotAxes(node)
	if err != nil {
		return fallback(NodeTypeDotGeneral)(node, vs, outShape)
	}
	ins := node.Inputs()
	lhs := operand{node: ins[0], contracting: axes.lhsContracting, batch: axes.lhsBatch}
	rhs := operand{node: ins[1], contracting: axes.rhsContracting, batch: axes.rhsBatch}
	lhs.free = freeAxes(lhs.node.Rank(), lhs.contracting, lhs.batch)
	rhs.free = freeAxes(rhs.node.Rank(), rhs.contracting, rhs.batch)
	nb := len(lhs.batch)
	lhs.outFree = count(nb, len(lhs.free))
	rhs.outFree = count(nb+len(lhs.free), len(rhs.free))
	v := vs[0]
	return []*Node{
		gradOf(lhs, rhs, v, chooseOtherFirst(lhs, rhs, v, nb)),
		gradOf(rhs, lhs, v, chooseOtherFirst(rhs, lhs, v, nb)),
	}
}

// chooseOtherFirst is otherFirstIsCheaper (tests try both ways).
var chooseOtherFirst = otherFirstIsCheaper

// otherFirstIsCheaper chooses between the two ways of writing this
// operand's gradient, v·other or other·v (the same numbers), by the
// elements XLA must transpose for each. XLA's CPU matrix multiply wants
// its operands as [batch, rows, contracted] and [batch, contracted,
// columns], row-major; an operand in another order is copied into that
// order first (or handed to a slower kernel that reads it strided), and a
// result in another order than this operand's is transposed after. For a
// layer's weights (x [batch, tokens, in] · W [in, out]) the cheaper way
// transposes the smaller of x and the output's gradient: for the second
// matrix of a transformer's MLP that is 4× less than the other way
// (bench/gpt: 2–4% of a small GPT's step).
func otherFirstIsCheaper(this, other operand, v *Node, nb int) bool {
	vBatch := count(0, nb)
	size := func(n *Node) int { return n.Shape().Size() }
	byOther := contractedByOther(this, other)
	// v·other: [batch, this's free, this's contracted]
	vFirst := 0
	if !inOrder(vBatch, this.outFree, other.outFree) {
		vFirst += size(v)
	}
	if !inOrder(other.batch, other.free, sortedAxes(other.contracting)) {
		vFirst += size(other.node)
	}
	if !inOrder(this.batch, this.free, byOther) {
		vFirst += size(this.node)
	}
	// other·v: [batch, this's contracted, this's free]
	otherFirst := 0
	if !inOrder(other.batch, sortedAxes(other.contracting), other.free) {
		otherFirst += size(other.node)
	}
	if !inOrder(vBatch, other.outFree, this.outFree) {
		otherFirst += size(v)
	}
	if !inOrder(this.batch, byOther, this.free) {
		otherFirst += size(this.node)
	}
	return otherFirst < vFirst
}

// contractedByOther lists this operand's contracted axes in the order the
// product gives them: by the other operand's paired axes, ascending.
func contractedByOther(this, other operand) []int {
	sorted := sortedAxes(other.contracting)
	out := make([]int, len(this.contracting))
	for k, a := range this.contracting {
		out[slices.Index(sorted, other.contracting[k])] = a
	}
	return out
}

func sortedAxes(axes []int) []int { return slices.Sorted(slices.Values(axes)) }

// inOrder reports whether the lists, concatenated, are 0, 1, 2, ...: the
// axes of a row-major tensor in its own order.
func inOrder(lists ...[]int) bool {
	next := 0
	for _, l := range lists {
		for _, a := range l {
			if a != next {
				return false
			}
			next++
		}
	}
	return true
}

// gradOf is the gradient of this operand: v contracted with other over the
// other's free axes, batch by batch. The result's axes come out as [batch,
// this's free, this's contracted] (v first) or [batch, this's contracted,
// this's free] (other first), and are transposed into this operand's
// order (see otherFirstIsCheaper).
func gradOf(this, other operand, v *Node, otherFirst bool) *Node {
	nb := len(this.batch)
	vBatch := count(0, nb)
	// this's contracted axes pair with other's contracted axes, which are
	// free in the product; they come out in other's axis order.
	sortedOther := slices.Sorted(slices.Values(other.contracting))
	contractedPos := make([]int, len(this.contracting)) // rank among the other's free (contracted) axes
	for k, a := range other.contracting {
		contractedPos[k] = slices.Index(sortedOther, a)
	}
	var r *Node
	perm := make([]int, this.node.Rank())
	if otherFirst {
		r = DotGeneral(other.node, other.free, other.batch, v, other.outFree, vBatch)
		for k, a := range this.contracting {
			perm[a] = nb + contractedPos[k]
		}
		for j, a := range this.free {
			perm[a] = nb + len(this.contracting) + j
		}
	} else {
		r = DotGeneral(v, other.outFree, vBatch, other.node, other.free, other.batch)
		for j, a := range this.free {
			perm[a] = nb + j
		}
		for k, a := range this.contracting {
			perm[a] = nb + len(this.free) + contractedPos[k]
		}
	}
	for i, a := range this.batch {
		perm[a] = i
	}
	// perm[a] is where this's axis a is in r: the transpose takes r's axis
	// perm[a] to position a.
	if isIdentity(perm) {
		return r
	}
	return TransposeAllAxes(r, perm...)
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if i != p {
			return false
		}
	}
	return true
}

// dotVJP is the gradient of GoMLX's Dot: vector·vector, matrix·vector and
// matrix·matrix.
func dotVJP(node *Node, vs []*Node, outShape shapes.Shape) []*Node {
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	v := vs[0]
	switch {
	case lhs.Rank() == 2 && rhs.Rank() == 2: // [m,k]·[k,n]
		return []*Node{
			DotGeneral(v, []int{1}, nil, rhs, []int{1}, nil), // [m,n]·[k,n]ᵀ = [m,k]
			DotGeneral(lhs, []int{0}, nil, v, []int{0}, nil), // [m,k]ᵀ·[m,n] = [k,n]
		}
	case lhs.Rank() == 2 && rhs.Rank() == 1: // [m,k]·[k]
		return []*Node{
			DotGeneral(v, nil, nil, rhs, nil, nil),           // outer product [m,k]
			DotGeneral(lhs, []int{0}, nil, v, []int{0}, nil), // [k]
		}
	}
	return fallback(NodeTypeDot)(node, vs, outShape)
}

// rsqrtVJP is the gradient of y = 1/√x: dy/dx = −½·x^(−3/2) = −½·y³.
func rsqrtVJP(node *Node, vs []*Node, _ shapes.Shape) []*Node {
	y := node
	return []*Node{MulScalar(Mul(vs[0], Mul(y, Square(y))), -0.5)}
}
