package cellrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// fakeChildEnv makes the test binary act as runcell (TestMain): its value
// says how the fake cell behaves.
const fakeChildEnv = "CELLRUN_FAKE_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeChildEnv); mode != "" {
		fakeChild(mode)
		return
	}
	os.Exit(m.Run())
}

// fakeChild records a cell the way runcell does, then behaves as mode says.
func fakeChild(mode string) {
	if mode == "session" {
		fakeSession()
		return
	}
	args := os.Args[1:] // -events FILE -max-output N SOURCE
	if len(args) != 5 || args[0] != "-events" || args[2] != "-max-output" {
		os.Exit(2)
	}
	f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		os.Exit(2)
	}
	rec := NewRecorder(f, time.Now(), 0)
	rec.Ready()
	rec.Stream("stdout", "one\n")
	rec.Stream("stderr", "two\n")
	switch mode {
	case "ok":
		rec.Stream("stdout", "three\n")
		rec.Reply(frontend.ExecuteReply{})
	case "fail":
		rec.Reply(frontend.ExecuteReply{Err: &frontend.Error{Name: "panic", Value: "boom", Traceback: []string{"\x1b[31mpanic: boom\x1b[0m"}}})
	case "crash":
		os.Stderr.WriteString("fatal error: something broke\n")
		os.Exit(2)
	case "hang":
		time.Sleep(time.Hour)
	}
	os.Exit(0)
}

func runFake(t *testing.T, mode string, timeout time.Duration) Outcome {
	t.Helper()
	t.Setenv(fakeChildEnv, mode)
	o, err := Run(context.Background(), Config{Binary: os.Args[0], Source: "prog.go", WorkDir: t.TempDir(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestRunReplied(t *testing.T) {
	o := runFake(t, "ok", 0)
	if !o.Replied || o.Error != nil || o.TimedOut || o.Died() {
		t.Fatalf("outcome %+v", o)
	}
	if got := o.Output(); got != "one\ntwo\nthree\n" {
		t.Errorf("output %q", got)
	}
	if o.Status != "exit status 0" {
		t.Errorf("status %q", o.Status)
	}
}

func TestRunFailed(t *testing.T) {
	o := runFake(t, "fail", 0)
	if !o.Replied || o.Error == nil || o.Error.Name != "panic" {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := o.Error.Text(), "panic: boom\npanic: boom"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func TestRunCrash(t *testing.T) {
	o := runFake(t, "crash", 0)
	if !o.Died() || o.ExitCode != 2 || !strings.Contains(o.Stderr, "fatal error: something broke") {
		t.Fatalf("outcome %+v", o)
	}
	if got := o.Output(); got != "one\ntwo\n" {
		t.Errorf("output before the crash %q", got)
	}
}

func TestRunHang(t *testing.T) {
	start := time.Now()
	o := runFake(t, "hang", 500*time.Millisecond)
	if !o.TimedOut || o.Replied || o.Died() {
		t.Fatalf("outcome %+v", o)
	}
	// The fake child hangs for an hour: returning at all shows the timeout
	// acted.
	if d := time.Since(start); d > 10*time.Minute {
		t.Errorf("took %v", d)
	}
}

func TestParseEventsSkipsTornLine(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf, time.Now(), 0)
	rec.Stream("stdout", "a")
	rec.Display(frontend.MIMEBundle{"text/plain": "x", "bad": func() {}}, nil, "id")
	buf.WriteString(`{"kind":"stream","na`)
	evs := ParseEvents(buf.Bytes())
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, []string{KindStream, KindDisplay}) {
		t.Fatalf("kinds %q", kinds)
	}
	if evs[1].Data["text/plain"] != "x" || len(evs[1].Data) != 1 {
		t.Errorf("display data %v", evs[1].Data)
	}
}

func TestStripANSI(t *testing.T) {
	if got := StripANSI("\x1b[1;31mred\x1b[0m plain"); got != "red plain" {
		t.Errorf("StripANSI = %q", got)
	}
}

func TestRecorderCapsStreams(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf, time.Now(), 5)
	rec.Stream("stdout", "abc")
	rec.Stream("stderr", "defg")
	rec.Stream("stdout", "hij")
	rec.Reply(frontend.ExecuteReply{})
	var kinds []string
	var text string
	for _, e := range ParseEvents(buf.Bytes()) {
		kinds = append(kinds, e.Kind)
		text += e.Text
	}
	if want := []string{KindStream, KindStream, KindTruncated, KindReply}; !slices.Equal(kinds, want) || text != "abcde" {
		t.Errorf("kinds %q, text %q", kinds, text)
	}
}

// fakeSession serves requests as runcell -session does; each program's
// source says what its cell does: "ok", "crash" or "hang".
func fakeSession() {
	requests, acks := os.NewFile(3, "requests"), os.NewFile(4, "acks")
	in := bufio.NewScanner(requests)
	for n := 1; in.Scan(); n++ {
		var req Request
		if json.Unmarshal(in.Bytes(), &req) != nil {
			os.Exit(2)
		}
		src, _ := os.ReadFile(req.Source)
		f, err := os.OpenFile(req.Events, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			os.Exit(2)
		}
		rec := NewRecorder(f, time.Now(), 0)
		rec.Ready()
		rec.Stream("stdout", fmt.Sprintf("cell %d: %s\n", n, src))
		switch string(src) {
		case "crash":
			os.Exit(2)
		case "hang":
			time.Sleep(time.Hour)
		}
		rec.Reply(frontend.ExecuteReply{})
		f.Close()
		fmt.Fprintln(acks, "done")
	}
}

func TestSessionRunsProgramsInOneChildAndRestartsIt(t *testing.T) {
	t.Setenv(fakeChildEnv, "session")
	dir := t.TempDir()
	prog := func(what string) string {
		p := filepath.Join(dir, fmt.Sprintf("p%d.go", time.Now().UnixNano()))
		if err := os.WriteFile(p, []byte(what), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := &Session{Binary: os.Args[0], Grace: 200 * time.Millisecond}
	defer s.Close()
	run := func(what string) Outcome {
		t.Helper()
		o, err := s.Run(context.Background(), prog(what), dir, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for i, want := range []string{"cell 1: ok\n", "cell 2: ok\n"} {
		if o := run("ok"); !o.Replied || o.Output() != want {
			t.Fatalf("program %d: %+v", i+1, o)
		}
	}
	if o := run("crash"); !o.Died() || o.Output() != "cell 3: crash\n" {
		t.Fatalf("crashing program: %+v", o)
	}
	if o := run("ok"); !o.Replied || o.Output() != "cell 1: ok\n" {
		t.Fatalf("after the crash, a new child: %+v", o)
	}
	if o := run("hang"); !o.TimedOut || o.Replied {
		t.Fatalf("stuck program: %+v", o)
	}
	if o := run("ok"); !o.Replied || o.Output() != "cell 1: ok\n" {
		t.Fatalf("after the stuck one, a new child: %+v", o)
	}
	if s.Restarts != 2 {
		t.Errorf("restarts %d, want 2", s.Restarts)
	}
}

func TestProgramOutputLeavesOutTheKernelsNotes(t *testing.T) {
	o := Outcome{Events: []Event{
		{Kind: KindStream, Name: "stderr", Text: "goaccel: added import \"fmt\"\n"},
		{Kind: KindStream, Name: "stdout", Text: "goaccel: printed by the program\n"},
		{Kind: KindStream, Name: "stderr", Text: "one\ngoaccel: warning: func f (cell[1]) keeps its previous definition\ntwo\n"},
	}}
	if got, want := o.ProgramOutput(), "goaccel: printed by the program\none\ntwo\n"; got != want {
		t.Errorf("ProgramOutput() = %q, want %q", got, want)
	}
	if !strings.Contains(o.Output(), "added import") {
		t.Errorf("Output() lost the notes: %q", o.Output())
	}
}
