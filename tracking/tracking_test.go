package tracking

import (
	"errors"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// custom is a user-defined tracker recording calls.
type custom struct {
	name  string
	calls []string
	fail  string // method that returns an error
}

func (c *custom) Name() string                   { return c.name }
func (c *custom) RequiresLoggingDirectory() bool { return false }
func (c *custom) MainProcessOnly() bool          { return true }
func (c *custom) Tracker() any                   { return c }
func (c *custom) rec(m string) error {
	c.calls = append(c.calls, m)
	if c.fail == m {
		return errors.New(m + " broke")
	}
	return nil
}
func (c *custom) Start() error                                { return c.rec("start") }
func (c *custom) StoreInitConfiguration(map[string]any) error { return c.rec("config") }
func (c *custom) Log(v map[string]any, step int, kw map[string]any) error {
	if kw != nil {
		c.calls = append(c.calls, "kw")
	}
	return c.rec("log")
}
func (c *custom) Finish() error { return c.rec("finish") }

// valueTracker has a non-comparable dynamic type.
type valueTracker struct {
	*custom
	m map[string]int
}

func (v valueTracker) Name() string { return "value" }

const choices9 = "['all', 'aim', 'tensorboard', 'wandb', 'comet_ml', 'mlflow', 'clearml', 'dvclive'"

func TestFilterUnknownName(t *testing.T) {
	_, err := Filter([]any{"tensorboard", "tensorbord"}, "logs")
	if err == nil || !strings.HasPrefix(err.Error(), "Unsupported logging capability: tensorbord. Choose between "+choices9) || !strings.HasSuffix(err.Error(), "]") {
		t.Fatalf("err = %v", err)
	}
	// Registered custom names are listed after the LoggerTypes.
	if !strings.Contains(err.Error(), "'livechart'") {
		t.Errorf("livechart not listed: %v", err)
	}
	if _, err := Filter([]any{42}, "logs"); err == nil || !strings.HasPrefix(err.Error(), "Unsupported logging capability: 42. Choose between ['all'") {
		t.Errorf("int: err = %v", err)
	}
}

func TestFilterRequiresLoggingDir(t *testing.T) {
	want := "Logging with `tensorboard` requires a `logging_dir` to be passed in."
	// "all" checks too: its first directory-needing tracker is aim when the
	// aim bridge is usable here, else tensorboard.
	wantAll := want
	if aimAvailable() == nil {
		wantAll = "Logging with `aim` requires a `logging_dir` to be passed in."
	}
	cases := []struct {
		in   []any
		want string
	}{
		{[]any{"tensorboard"}, want}, {[]any{TensorBoard}, want},
		{[]any{"all"}, wantAll}, {[]any{All}, wantAll}, {[]any{[]string{"dvclive", "all"}}, wantAll},
	}
	for _, c := range cases {
		_, err := Filter(c.in, "")
		if err == nil || err.Error() != c.want {
			t.Errorf("Filter(%v, \"\") err = %v, want %q", c.in, err, c.want)
		}
	}
	if specs, err := Filter([]any{"dvclive"}, ""); err != nil || len(specs) != 1 {
		t.Errorf("dvclive needs no directory: %v %v", specs, err)
	}
}

func names(specs []Spec) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func TestFilterAllAndDedupe(t *testing.T) {
	t.Setenv("MLFLOW_TRACKING_URI", "")
	c := &custom{name: "mine"}
	specs, err := Filter([]any{c, "all", c, "tensorboard"}, "logs")
	if err != nil {
		t.Fatal(err)
	}
	got := names(specs)
	if !strings.HasPrefix(got, "mine,") || strings.Count(got, "mine") != 1 || strings.Count(got, "tensorboard") != 1 ||
		!strings.Contains(got, "tensorboard,wandb,comet_ml,clearml,dvclive") || strings.Contains(got, "mlflow") || strings.Contains(got, "livechart") {
		t.Errorf("all = %s", got)
	}
	if specs[0].Instance != c {
		t.Error("the instance is not used as-is")
	}
	t.Setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
	specs, _ = Filter([]any{"all"}, "logs")
	if !strings.Contains(names(specs), "mlflow") {
		t.Errorf("all with a tracking server = %s", names(specs))
	}
	specs, err = Filter([]any{"dvclive", LoggerType("dvclive"), []LoggerType{TensorBoard}, "livechart"}, "logs")
	if err != nil || names(specs) != "dvclive,tensorboard,livechart" {
		t.Errorf("dedupe = %s, %v", names(specs), err)
	}
	v1, v2 := valueTracker{&custom{}, map[string]int{}}, valueTracker{&custom{}, map[string]int{}}
	if specs, err := Filter([]any{v1, v2}, ""); err != nil || len(specs) != 2 {
		t.Errorf("non-comparable instances: %v %v", specs, err)
	}
}

func TestFilterMissingName(t *testing.T) {
	if _, err := Filter([]any{&custom{}}, ""); err == nil || !strings.Contains(err.Error(), "`name`") {
		t.Errorf("err = %v", err)
	}
}

func TestRegisterCustom(t *testing.T) {
	made := 0
	f := func(run, dir string, kw map[string]any) (GeneralTracker, error) {
		made++
		return &custom{name: "myboard", calls: []string{run, dir, kw["k"].(string)}}, nil
	}
	if err := Register("myboard", true, f); err != nil {
		t.Fatal(err)
	}
	defer Unregister("myboard")
	if err := Register("all", false, f); err == nil {
		t.Error(`registering "all" succeeded`)
	}
	if _, err := Filter([]any{"myboard"}, ""); err == nil || err.Error() != "Logging with `myboard` requires a `logging_dir` to be passed in." {
		t.Errorf("err = %v", err)
	}
	specs, err := Filter([]any{"myboard"}, "d")
	if err != nil {
		t.Fatal(err)
	}
	trackers, err := Init(specs, "proj", "d", map[string]map[string]any{"myboard": {"k": "v"}})
	if err != nil || len(trackers) != 1 {
		t.Fatal(err)
	}
	if c := trackers[0].(*custom); strings.Join(c.calls, " ") != "proj d v" {
		t.Errorf("factory got %v", c.calls)
	}
	if all, _ := Filter([]any{"all"}, "d"); !strings.Contains(names(all), "myboard") {
		t.Errorf("a registered custom tracker is not in all: %s", names(all))
	}
}

func TestInitBuiltins(t *testing.T) {
	dir := t.TempDir()
	specs, err := Filter([]any{"tensorboard", "dvclive", "livechart"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	trackers, err := Init(specs, "proj", dir, map[string]map[string]any{"tensorboard": {"flush_secs": 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	m := NewMulti(log, trackers...)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.StoreInitConfiguration(map[string]any{"lr": 0.1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Log(map[string]any{"loss": 1.0}, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.LogTable("t", []string{"a"}, [][]any{{1}}, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(); err != nil {
		t.Fatal(err)
	}
	// tensorboard logs tables; dvclive and livechart do not, and say so.
	if n := len(hook.AllEntries()); n != 2 {
		t.Errorf("want 2 warnings about tables, got %v", hook.AllEntries())
	}
	t.Setenv("MLFLOW_TRACKING_URI", "")
	specs, _ = Filter([]any{"mlflow"}, "")
	if _, err := Init(specs, "p", "", nil); err == nil || !strings.Contains(err.Error(), "creating the mlflow tracker") || !strings.Contains(err.Error(), "mlflow server") {
		t.Errorf("mlflow without a server: %v", err)
	}
}

func TestMultiCollectsErrors(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	a, b := &custom{name: "a", fail: "log"}, &custom{name: "b"}
	m := NewMulti(log, a, b)
	err := m.Log(map[string]any{"x": 1}, 1, map[string]any{"b": map[string]any{"k": 1}})
	if err == nil || err.Error() != "a tracker: log: log broke" {
		t.Errorf("err = %v", err)
	}
	if strings.Join(b.calls, " ") != "kw log" || strings.Join(a.calls, " ") != "log" {
		t.Errorf("calls a=%v b=%v", a.calls, b.calls)
	}
	// custom trackers cannot log images: warned once, not an error.
	for i := 0; i < 2; i++ {
		if err := m.LogImages(map[string]any{}, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(hook.AllEntries()) != 2 { // a and b, once each
		t.Errorf("warnings: %v", hook.AllEntries())
	}
	if got, err := m.Get("b"); err != nil || got != b {
		t.Errorf("Get(b) = %v, %v", got, err)
	}
	if _, err := m.Get("zz"); err == nil || err.Error() != "zz is not an available tracker stored inside the `Accelerator`." {
		t.Errorf("Get(zz) err = %v", err)
	}
	if got, _ := NewMulti(nil).Get("wandb"); got.Name() != "wandb" {
		t.Errorf("Get on an empty Multi = %v", got)
	}
	a.fail, b.fail = "finish", "finish"
	if err := m.Finish(); err == nil || !strings.Contains(err.Error(), "a tracker: finish") || !strings.Contains(err.Error(), "b tracker: finish") {
		t.Errorf("finish err = %v", err)
	}
}

func TestNoOpAndForProcess(t *testing.T) {
	c := &custom{name: "c"}
	ts := ForProcess([]GeneralTracker{c}, false)
	n, ok := ts[0].(*NoOp)
	if !ok || n.Name() != "c" {
		t.Fatalf("non-main got %T", ts[0])
	}
	if n.Start() != nil || n.Log(nil, 1, nil) != nil || n.LogImages(nil, 1, nil) != nil || n.LogTable("t", nil, nil, 1, nil) != nil || n.Finish() != nil || n.Tracker() != nil {
		t.Error("NoOp method failed")
	}
	if ForProcess([]GeneralTracker{c}, true)[0] != c {
		t.Error("main process lost its tracker")
	}
	if (&NoOp{}).Name() != "blank" {
		t.Error("blank name")
	}
}

func TestClassify(t *testing.T) {
	type myFloat float64
	cases := map[string]struct {
		v    any
		want Kind
	}{
		"float": {0.5, Scalar}, "int": {3, Scalar}, "uint8": {uint8(3), Scalar}, "named": {myFloat(1), Scalar}, "bool": {true, Scalar},
		"string": {"s", Text}, "group": {map[string]float64{"a": 1}, Group}, "group-any": {map[string]any{"a": 1, "b": 2.5}, Group},
		"mixed map": {map[string]any{"a": 1, "b": "x"}, Unsupported}, "empty map": {map[string]float64{}, Unsupported},
		"slice": {[]float64{1}, Unsupported}, "nil": {nil, Unsupported}, "struct": {struct{}{}, Unsupported},
	}
	for name, c := range cases {
		if got := Classify(c.v); got != c.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", name, c.v, got, c.want)
		}
	}
}

func TestFilterHintsAtCellTrackers(t *testing.T) {
	type notATracker struct{ rows []string }
	_, err := Filter([]any{&notATracker{}}, "logs")
	if err == nil || !strings.HasPrefix(err.Error(), "Unsupported logging capability: &{[]}. Choose between ['all'") ||
		!strings.Contains(err.Error(), "var t tracking.GeneralTracker = &MyTracker{}") {
		t.Fatalf("err = %v", err)
	}
}
