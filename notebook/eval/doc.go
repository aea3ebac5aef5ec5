// Package eval runs simple notebook cells without building them: a cell
// that package check accepted is compiled into a tree of Go closures over
// reflect values and run in the kernel's process, with the session's
// variables, functions and types reached through an Env. Cells of
// assignments, increments, calls and a trailing expression — `x`, `x + 1`,
// `fmt.Println(x)`, `n = 5`, `total += v`, `v, err := strconv.Atoi(s)` —
// then take microseconds instead of a toolchain build.
//
// The evaluator has exactly Go's semantics for what it accepts, or it does
// not accept the cell: Compile walks the whole cell before anything runs
// and returns a *NotEligible error for any construct outside its subset
// (the engine then compiles the cell as usual), so a cell never runs
// half-way on one path and then on the other.
//
// Exactness is obtained by running Go's own code rather than imitating it:
//
//   - arithmetic, comparisons and conversions of basic types run as the Go
//     operators on the concrete types (generic functions instantiated per
//     kind), so integers wrap at their size, division by zero panics with
//     the runtime's error and floating-point rounding is the compiler's;
//   - the runtime errors the evaluator must raise itself (index out of
//     range, nil pointer dereference, nil map assignment) are raised by
//     performing the same failing operation, so their values are the
//     runtime's own (runtime.Error, the same text);
//   - constants are those go/types computed (types.Info);
//   - calls go through reflect to the very functions compiled cells call:
//     the session's (compiled cell code) and the packages linked into the
//     kernel (yaegi's symbol tables of the standard library and the tables
//     of package symbols), whose run-time types must match the checker's.
//
// Go leaves unspecified when an operand that is not a call is evaluated
// relative to the calls of the same statement (gc evaluates the calls
// first); the evaluator accepts only statements where that cannot be seen:
// no variable read, index or other operation that can panic may stand to
// the left of a call among the operands of one expression.
//
// The evaluator uses only type descriptors compiled code has (of a loaded
// module: the kernel, a cell's plugin), never ones reflect would make up,
// which a plugin loaded later would not share (see rtype): a cell needing
// a type no compiled code has yet is compiled.
//
// Package-level var declarations are initialized as compiled cells
// initialize them (go/types' InitOrder, then zero values), and time.Sleep
// can be interrupted (it is otherwise the runtime's, a compiled cell's
// cannot be).
//
// Not accepted (compiled instead): declarations of types, functions and
// constants; control flow (if, for, switch,
// go, defer, return, labels); function literals; type assertions;
// channel operations; slicing; generic functions; unexported methods;
// os.Exit, log.Fatal and the launchers (which compiled cells reach through
// goaccel's runtime); operations on values whose types reflect cannot
// spell (unnamed struct types, type parameters).
package eval
