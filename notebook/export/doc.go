// Package export turns a notebook's code cells into one Go program that
// prints what running them in order (Jupyter's Run All) printed.
//
// The cells are checked in order by the kernel's own checker (package
// check), so the program means what the notebook meant: the same imports
// added for forgotten ones, the same types found for the variables that
// top-level statements define, the same redefinitions. Then:
//
//   - declarations (types, functions, methods, constants) become
//     package-level code, their text as the cell wrote it;
//   - statements become the body of main, cell after cell; a variable a
//     top-level statement or a var declaration defines becomes a
//     package-level variable (its type spelled out) and its definition an
//     assignment at the place where the cell ran, because a later cell's
//     function may use it and a var initializer must see what the cells
//     before it did;
//   - a cell's trailing expression, shown as its result in the notebook, is
//     printed as the kernel's text/plain (display.PrintResult);
//   - a name declared again keeps, for the code of the cells before, the
//     binding it ran with: an earlier type, variable of another type or
//     constant is renamed name_cellN. A function redefined with the same
//     signature is what the kernel binds late: calls made after the
//     redefinition reach the new body, so the program declares each body
//     (name_cellN) and a variable holding the current one, assigned where
//     each cell ran;
//   - func main and init functions of cells run where their cell ran.
//
// Magics and shell lines have no program equivalent except %env (os.Setenv)
// and the module commands (%go get, %use: the caller applies them to the
// module the program is built in); every other one is left as a comment
// and reported in Result.Notes. Output that only a notebook shows (display
// calls, widgets) is dropped by the display package in a plain program.
package export
