package values

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestFloatAndString(t *testing.T) {
	type myInt int16
	type myStr string
	for _, c := range []struct {
		v    any
		want float64
		ok   bool
	}{{1.5, 1.5, true}, {float32(0.5), 0.5, true}, {int8(-3), -3, true}, {uint64(7), 7, true}, {myInt(4), 4, true}, {true, 1, true}, {false, 0, true}, {"1", 0, false}, {nil, 0, false}, {[]int{1}, 0, false}} {
		got, ok := Float(c.v)
		if got != c.want || ok != c.ok {
			t.Errorf("Float(%#v) = %v, %v", c.v, got, ok)
		}
	}
	if s, ok := String(myStr("x")); !ok || s != "x" {
		t.Errorf("String(myStr) = %q %v", s, ok)
	}
	if Classify(myStr("x")) != Text {
		t.Error("named string is not text")
	}
}

func TestGroupEntries(t *testing.T) {
	e, ok := GroupEntries(map[string]any{"b": 2, "a": float32(1.5)})
	if !ok || len(e) != 2 || e[0] != (Entry{"a", 1.5}) || e[1] != (Entry{"b", 2}) {
		t.Errorf("entries %v %v", e, ok)
	}
	if _, ok := GroupEntries(map[string]any{"a": "x"}); ok {
		t.Error("a map with a string is a group")
	}
	if _, ok := GroupEntries(map[int]float64{1: 1}); ok {
		t.Error("a map with int keys is a group")
	}
}

func TestWarnerOncePerKeyAndType(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	w := NewWarner("tb", log)
	w.Unsupported("k", []int{1}, "numbers")
	w.Unsupported("k", []int{2}, "numbers")
	w.Unsupported("k", struct{}{}, "numbers")
	w.Unsupported("j", []int{1}, "numbers")
	if n := len(hook.AllEntries()); n != 3 {
		t.Fatalf("%d warnings, want 3", n)
	}
	if m := hook.AllEntries()[0].Message; !strings.HasPrefix(m, "tb: ") || !strings.Contains(m, `"k"`) || !strings.Contains(m, "[]int") {
		t.Errorf("message %q", m)
	}
	if NewWarner("x", nil).Logger() == nil {
		t.Error("nil logger not defaulted")
	}
}

func TestJSONEncodableLeavesOutWhatJSONCannotEncode(t *testing.T) {
	hook := logtest.NewGlobal()
	defer logrus.StandardLogger().ReplaceHooks(make(logrus.LevelHooks))
	got := JSONEncodable(map[string]any{"lr": 0.1, "ch": make(chan int)}, "aim: hyperparameter")
	if len(got) != 1 || got["lr"] != 0.1 {
		t.Fatalf("kept %v", got)
	}
	if e := hook.LastEntry(); e == nil || !strings.Contains(e.Message, `aim: hyperparameter "ch" (chan int) cannot be stored`) {
		t.Fatalf("warning = %v", e)
	}
}
