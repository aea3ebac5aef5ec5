package input

import (
	"errors"
	"testing"
)

func TestSource(t *testing.T) {
	if _, err := Line("x"); !errors.Is(err, ErrNoSource) {
		t.Fatalf("no source: %v", err)
	}
	var gotPrompt string
	var gotPassword bool
	restore := SetSource(func(prompt string, password bool) (string, error) {
		gotPrompt, gotPassword = prompt, password
		return "typed", nil
	})
	if s, err := Password("pw: "); err != nil || s != "typed" || gotPrompt != "pw: " || !gotPassword {
		t.Errorf("Password = %q, %v (prompt %q, password %v)", s, err, gotPrompt, gotPassword)
	}
	if s, _ := Line("l: "); s != "typed" || gotPassword {
		t.Errorf("Line = %q (password %v)", s, gotPassword)
	}
	restore()
	if _, err := Line("x"); !errors.Is(err, ErrNoSource) {
		t.Errorf("after restore: %v", err)
	}
}
