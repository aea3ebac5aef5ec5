// Package check is Go's type checker (go/types) in front of goaccel's cell
// engine: it decides what a notebook cell means, or rejects it with Go's own
// message at the cell's line and column, before anything runs.
//
// # The session model
//
// A Session holds what earlier cells left behind: the current binding of
// every top-level name (types, functions, variables, constants), the methods
// of the types, and the imports. Every cell is checked as package main of
// its own: the session's objects are inserted into the package scope, the
// cell's imports and declarations are checked as Go declarations, and its
// statements as the body of a function. All cells share the package path
// "main", so a cell sees the unexported fields and methods of the types of
// earlier cells exactly as one Go package would.
//
// Notebook rules on top of Go's:
//
//   - top-level variables and imports may go unused;
//   - a later cell may declare a name again (of any kind); the newest
//     binding wins from then on;
//   - the trailing expression of a cell is its result, not an unused value;
//   - variables defined by top-level statements (x := f()) become session
//     variables with the types the checker found (they are "hoisted": the
//     canonical form of a cell declares them at package level and its
//     statements assign them, so functions of the same cell see them);
//   - a var or const declaration that follows a statement runs in order with
//     the statements.
//
// # Redefinition
//
// Go binds names when it compiles, so a new binding must reach the code that
// used the old one. A function redefined with the same signature, or a
// variable with the same type, is compatible: code compiled earlier is
// redirected at run time (the engine's business). Anything else — a type
// redefined, a method added to a type of an earlier cell, a signature or a
// constant changed — makes the earlier declarations that depend on it stale:
// Check recompiles them into the new cell ("re-homes" them, from their
// source) so they use the new binding. A dependent that no longer compiles
// keeps its old binding and the cell reports a warning; a type that the cell
// adds methods to must compile. Values made from an old type keep it.
package check
