// Package gonb is goaccel's side of GoNB, the Go kernel whose notebooks Go
// users already have (GoMLX's tutorials among them): its cell language
// and the protocol of its gonbui library.
//
// Parse splits a cell written in GoNB's language: special commands (% and
// ! lines, anywhere in the cell, also written //gonb:%...), the %% (or
// %main, %exec) marker after which the cell is func main, and the cell
// magics (%%writefile, %%script, %%bash, %%sh). The engine (package
// notebook) gives each command its meaning here.
//
// Server serves gonbui: it makes the named pipes gonbui opens
// (GONB_PIPE, GONB_PIPE_BACK), decodes what cells send (encoding/gob
// values of gonbui/protocol's types: display data, updates by display id,
// input requests, comm values and subscriptions) and hands each to a
// Handler, which the engine points at the running cell. In GoNB each cell
// is a new process; here the cells share one, so gonbui opens the pipes
// once and its state lives for the whole session: the server keeps one
// pipe pair per session and routes what arrives to the cell that runs
// when it arrives.
//
// Comms carries gonbui's front-end communication (widgets, gonbui/dom)
// over a Jupyter comm with target "gonb_comm", which the JavaScript
// FrontendJS installs in the browser opens.
package gonb
