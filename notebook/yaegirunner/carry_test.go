package yaegirunner

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// compiledP stands for a compiled cell's `type P struct{X int; name string;
// Next *P; Tags map[string][]float64}`.
type compiledP struct {
	X    int
	name string
	Next *compiledP
	Tags map[string][]float64
}

// compiledQ has P's layout but is another type (as the same declaration is
// in the other world).
type compiledQ struct {
	X    int
	name string
	Next *compiledQ
	Tags map[string][]float64
}

type celsius float64

func TestCarryAcrossWorlds(t *testing.T) {
	// compiled → as the interpreter makes the type (an unnamed struct whose
	// unexported field is exported as Xname), and back.
	src := compiledP{X: 3, name: "q", Tags: map[string][]float64{"a": {1, 2}}}
	flat := reflect.StructOf([]reflect.StructField{
		{Name: "X", Type: reflect.TypeFor[int]()},
		{Name: "Xname", Type: reflect.TypeFor[string]()},
		{Name: "Tags", Type: reflect.TypeFor[map[string][]float64]()},
	})
	type compiledFlat struct {
		X    int
		name string
		Tags map[string][]float64
	}
	dst := reflect.New(flat).Elem()
	if err := debugCarryValue(dst, reflect.ValueOf(compiledFlat{X: src.X, name: src.name, Tags: src.Tags})); err != nil {
		t.Fatal(err)
	}
	if dst.Field(0).Int() != 3 || dst.Field(1).String() != "q" || dst.Field(2).Len() != 1 {
		t.Errorf("carried in: %v", dst)
	}
	back := reflect.New(reflect.TypeFor[compiledFlat]()).Elem()
	if err := debugCarryValue(back, dst); err != nil {
		t.Fatal(err)
	}
	if got := back.Interface().(compiledFlat); got.X != 3 || got.name != "q" || got.Tags["a"][1] != 2 {
		t.Errorf("carried back: %+v", got)
	}

	// Named basic types convert by kind; standard library types are shared.
	var c celsius
	if err := debugCarryValue(reflect.ValueOf(&c).Elem(), reflect.ValueOf(36.6)); err != nil || c != 36.6 {
		t.Errorf("celsius: %v %v", c, err)
	}
	now := time.Now()
	var tm time.Time
	if err := debugCarryValue(reflect.ValueOf(&tm).Elem(), reflect.ValueOf(now)); err != nil || !tm.Equal(now) {
		t.Errorf("time: %v %v", tm, err)
	}

	// Pointers shared inside a value stay shared; a cycle is kept.
	a := &compiledP{X: 1}
	a.Next = a
	list := []*compiledP{a, a}
	var out []*compiledQ
	if err := debugCarryValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(list)); err != nil {
		t.Fatal(err)
	}
	if out[0] != out[1] || out[0].Next != out[0] || out[0].X != 1 {
		t.Errorf("sharing: %p %p %p", out[0], out[1], out[0].Next)
	}

	// A declared type in an interface does not carry.
	var anyDst any
	err := debugCarryValue(reflect.ValueOf(&anyDst).Elem(), reflect.ValueOf([]any{struct{ X int }{}}).Index(0))
	if err == nil || !strings.Contains(err.Error(), "interface") {
		t.Errorf("interface holding a declared type: %v", err)
	}
	// ...but a standard one does.
	if err := debugCarryValue(reflect.ValueOf(&anyDst).Elem(), reflect.ValueOf([]any{42}).Index(0)); err != nil || anyDst != 42 {
		t.Errorf("interface holding an int: %v %v", anyDst, err)
	}
	// Layouts that differ are refused with where.
	type other struct{ Y int }
	if err := debugCarryValue(reflect.New(reflect.TypeFor[other]()).Elem(), reflect.ValueOf(struct{ X int }{})); err == nil || !strings.Contains(err.Error(), "no field Y") {
		t.Errorf("different fields: %v", err)
	}
}
