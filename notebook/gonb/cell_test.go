package gonb

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMain(t *testing.T) {
	src := "var startValue = float32(1)\n\n%% --a=1 \"two words\"\nstartValue = incr(startValue)\nfmt.Println(startValue)"
	c, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if c.Main == nil || c.Main.Line != 3 || !reflect.DeepEqual(c.Main.Args, []string{"--a=1", "two words"}) {
		t.Fatalf("main: %+v", c.Main)
	}
	want := "var startValue = float32(1)\n\nfunc main() {\nstartValue = incr(startValue)\nfmt.Println(startValue)\n}"
	if c.Code != want {
		t.Errorf("code:\n%s\nwant:\n%s", c.Code, want)
	}
	if len(c.Commands) != 0 {
		t.Errorf("commands: %+v", c.Commands)
	}
}

func TestParseCommandsAnywhere(t *testing.T) {
	src := strings.Join([]string{
		"%goflags --cover",
		"import \"os\"",
		"!echo a \\",
		"  b",
		"func TestA(t *testing.T) {}",
		"//gonb:%test -test.v",
		"x := `",
		"%not a command",
		"`",
		"  !ok",
	}, "\n")
	c, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cmd := range c.Commands {
		got = append(got, cmd.Name()+"|"+cmd.Arg())
	}
	want := []string{"goflags|--cover", "!|echo a \\\n  b", "test|-test.v"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
	lines := strings.Split(c.Code, "\n")
	if lines[0] != "" || lines[2] != "" || lines[3] != "" || lines[5] != "" || lines[7] != "%not a command" || lines[9] != "  !ok" {
		t.Errorf("code:\n%s", c.Code)
	}
	if !c.Commands[0].Leading || c.Commands[1].Leading {
		t.Errorf("leading: %+v", c.Commands)
	}
}

func TestParseExecAndCellMagics(t *testing.T) {
	c, err := Parse("func f() {}\n//gonb:%exec f -x=17")
	if err != nil {
		t.Fatal(err)
	}
	if c.Main == nil || c.Main.Exec != "f" || !reflect.DeepEqual(c.Main.Args, []string{"-x=17"}) {
		t.Fatalf("%+v", c.Main)
	}
	if !strings.HasSuffix(c.Code, "func main() { f() }") {
		t.Errorf("code %q", c.Code)
	}
	c, err = Parse("%%writefile -a ${TEST_DIR}poetry.txt\nline 1\nline 2")
	if err != nil || c.Magic == nil || c.Magic.Name != "writefile" || !reflect.DeepEqual(c.Magic.Args, []string{"-a", "${TEST_DIR}poetry.txt"}) || c.Magic.Body != "line 1\nline 2" {
		t.Fatalf("%+v %v", c.Magic, err)
	}
	if _, err := Parse("X=17\n%%sh\necho $X"); err == nil || !strings.Contains(err.Error(), "can only appear at the start of the cell") {
		t.Errorf("%%%%sh in the middle: %v", err)
	}
	c, err = Parse("%%time\nx := 1")
	if err != nil || len(c.Commands) != 1 || c.Commands[0].Name() != "%time" || c.Main != nil {
		t.Errorf("%%%%time: %+v %v", c, err)
	}
	if _, err := Parse("%%\na()\n%%\nb()"); err == nil {
		t.Error("two %% accepted")
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string][]string{
		``:                                 nil,
		`""`:                               {""},
		`-a "b c" 'd e'`:                   {"-a", "b c", "d e"},
		`--text "x\ty\"z"`:                 {"--text", "x\ty\"z"},
		`-test.bench=. -test.run=Bechmark`: {"-test.bench=.", "-test.run=Bechmark"},
	} {
		got, err := SplitArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := SplitArgs(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestParseInits(t *testing.T) {
	c, err := Parse("func init_a() {\n\tfmt.Println(\"a\")\n}\nx := `\nfunc init_b() {\n`")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Inits, []string{"init_a"}) {
		t.Errorf("inits %q", c.Inits)
	}
}
