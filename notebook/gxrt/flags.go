package gxrt

import (
	"encoding"
	"flag"
	"sync"
	"sync/atomic"
	"time"
)

// Flags of cells. A program defines each flag once; notebook cells run
// again and redefine flags (a cell run twice, a later cell declaring the
// variable again), which flag.CommandLine refuses with a panic. Cells
// define flags through the functions below instead: a flag defined again
// replaces the earlier definition, as a new run of the program would
// have it. Flags that packages define (at init) are left alone.

var flagMu sync.Mutex

// forgetFlag removes the flag name from flag.CommandLine (which has no
// way to delete one): a new set holds every other flag, with its value
// and default.
func forgetFlag(name string) {
	old := flag.CommandLine
	if old.Lookup(name) == nil {
		return
	}
	fs := flag.NewFlagSet(old.Name(), flag.ContinueOnError)
	fs.Usage = old.Usage
	fs.SetOutput(old.Output())
	old.VisitAll(func(f *flag.Flag) {
		if f.Name == name {
			return
		}
		fs.Var(f.Value, f.Name, f.Usage)
		fs.Lookup(f.Name).DefValue = f.DefValue
	})
	if old.Parsed() {
		_ = fs.Parse(nil)
	}
	flag.CommandLine = fs
}

// define runs def (a flag.X call) after forgetting an earlier flag name.
func define[T any](name string, def func() T) T {
	flagMu.Lock()
	defer flagMu.Unlock()
	forgetFlag(name)
	return def()
}

// ResetFlags sets every flag back to its default value, as a new run of
// the program starts (%args, GoNB's %% ARGS).
func ResetFlags() {
	flagMu.Lock()
	defer flagMu.Unlock()
	flag.CommandLine.VisitAll(func(f *flag.Flag) { _ = f.Value.Set(f.DefValue) })
}

// The flag package's definers, for cells.

func FlagBool(name string, value bool, usage string) *bool {
	return define(name, func() *bool { return flag.Bool(name, value, usage) })
}
func FlagBoolVar(p *bool, name string, value bool, usage string) {
	define(name, func() int { flag.BoolVar(p, name, value, usage); return 0 })
}
func FlagInt(name string, value int, usage string) *int {
	return define(name, func() *int { return flag.Int(name, value, usage) })
}
func FlagIntVar(p *int, name string, value int, usage string) {
	define(name, func() int { flag.IntVar(p, name, value, usage); return 0 })
}
func FlagInt64(name string, value int64, usage string) *int64 {
	return define(name, func() *int64 { return flag.Int64(name, value, usage) })
}
func FlagInt64Var(p *int64, name string, value int64, usage string) {
	define(name, func() int { flag.Int64Var(p, name, value, usage); return 0 })
}
func FlagUint(name string, value uint, usage string) *uint {
	return define(name, func() *uint { return flag.Uint(name, value, usage) })
}
func FlagUintVar(p *uint, name string, value uint, usage string) {
	define(name, func() int { flag.UintVar(p, name, value, usage); return 0 })
}
func FlagUint64(name string, value uint64, usage string) *uint64 {
	return define(name, func() *uint64 { return flag.Uint64(name, value, usage) })
}
func FlagUint64Var(p *uint64, name string, value uint64, usage string) {
	define(name, func() int { flag.Uint64Var(p, name, value, usage); return 0 })
}
func FlagString(name string, value string, usage string) *string {
	return define(name, func() *string { return flag.String(name, value, usage) })
}
func FlagStringVar(p *string, name string, value string, usage string) {
	define(name, func() int { flag.StringVar(p, name, value, usage); return 0 })
}
func FlagFloat64(name string, value float64, usage string) *float64 {
	return define(name, func() *float64 { return flag.Float64(name, value, usage) })
}
func FlagFloat64Var(p *float64, name string, value float64, usage string) {
	define(name, func() int { flag.Float64Var(p, name, value, usage); return 0 })
}
func FlagDuration(name string, value time.Duration, usage string) *time.Duration {
	return define(name, func() *time.Duration { return flag.Duration(name, value, usage) })
}
func FlagDurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	define(name, func() int { flag.DurationVar(p, name, value, usage); return 0 })
}
func FlagFunc(name, usage string, fn func(string) error) {
	define(name, func() int { flag.Func(name, usage, fn); return 0 })
}
func FlagBoolFunc(name, usage string, fn func(string) error) {
	define(name, func() int { flag.BoolFunc(name, usage, fn); return 0 })
}
func FlagTextVar(p encoding.TextUnmarshaler, name string, value encoding.TextMarshaler, usage string) {
	define(name, func() int { flag.TextVar(p, name, value, usage); return 0 })
}
func FlagVar(value flag.Value, name string, usage string) {
	define(name, func() int { flag.Var(value, name, usage); return 0 })
}

// FlagDefiners maps the flag package's definers to the functions cells
// call instead (gen rewrites the calls).
var FlagDefiners = map[string]string{
	"Bool": "FlagBool", "BoolVar": "FlagBoolVar", "Int": "FlagInt", "IntVar": "FlagIntVar",
	"Int64": "FlagInt64", "Int64Var": "FlagInt64Var", "Uint": "FlagUint", "UintVar": "FlagUintVar",
	"Uint64": "FlagUint64", "Uint64Var": "FlagUint64Var", "String": "FlagString", "StringVar": "FlagStringVar",
	"Float64": "FlagFloat64", "Float64Var": "FlagFloat64Var", "Duration": "FlagDuration", "DurationVar": "FlagDurationVar",
	"Func": "FlagFunc", "BoolFunc": "FlagBoolFunc", "TextVar": "FlagTextVar", "Var": "FlagVar",
}

// mainHook runs before a cell's func main (see Main).
var mainHook atomic.Pointer[func()]

// SetMainHook makes f run before the func main of the cells that follow,
// nil for nothing (GoNB's %%: flag.Parse first).
func SetMainHook(f func()) {
	if f == nil {
		mainHook.Store(nil)
		return
	}
	mainHook.Store(&f)
}

// Main runs a cell's func main, after the engine's hook.
func Main(main func()) {
	if h := mainHook.Load(); h != nil {
		(*h)()
	}
	main()
}
