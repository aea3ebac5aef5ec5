package interrupt

import (
	"errors"
	"testing"
)

type stop struct{}

func (stop) Error() string    { return "interrupted" }
func (stop) CellInterrupted() {}

func TestPoint(t *testing.T) {
	Point() // no check installed: returns

	stopping := false
	restore := SetCheck(func() {
		if stopping {
			panic(stop{})
		}
	})
	Point()
	stopping = true
	got := func() (v any) {
		defer func() { v = recover() }()
		Point()
		return nil
	}()
	if !IsUnwinding(got) {
		t.Fatalf("Point in a stopped cell recovered %v, want an Unwinding", got)
	}
	restore()
	Point() // the previous (no) check again
}

func TestRepanic(t *testing.T) {
	Repanic(errors.New("an ordinary panic")) // not an unwinding: returns
	Repanic(nil)
	defer func() {
		if r := recover(); !IsUnwinding(r) {
			t.Fatalf("recovered %v", r)
		}
	}()
	Repanic(stop{})
	t.Fatal("Repanic returned for an unwinding")
}
