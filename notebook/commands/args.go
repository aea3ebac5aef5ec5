package commands

// %args: the command-line arguments cells see.

import (
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/goaccel/goaccel/notebook/gxrt"
)

// SetArgs makes args the process's os.Args[1:], which cells share with the
// kernel, and sets every flag back to its default value, as a new run of
// a program starts: flag.Parse in a cell (gxrt.FlagParse) parses
// os.Args[1:]. The flags cells defined stay defined (a cell defining a
// flag again replaces it: see gxrt/flags.go).
func SetArgs(args []string) {
	os.Args = append([]string{os.Args[0]}, args...)
	gxrt.ResetFlags()
}

// FreshFlags gives package flag a fresh flag set, without the kernel's
// own flags: cells see a program's.
func FreshFlags() {
	fs := flag.NewFlagSet(os.Args[0], flag.ContinueOnError)
	fs.Usage = func() { flag.Usage() }
	// Parsed (with nothing) as the process's flags were: code that asks
	// flag.Parsed() (testing.Short, libraries) keeps working.
	_ = fs.Parse(nil)
	flag.CommandLine = fs
}

// SplitArgs splits a line into words as sh does for plain words: blanks
// separate them, '...' and "..." quote (with \ escaping ", \, $ and ` in
// double quotes), \ escapes the next character outside quotes.
func SplitArgs(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			if i+1 < len(line) {
				i++
				cur.WriteByte(line[i])
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New(`unterminated " quote`)
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	if args == nil {
		args = []string{}
	}
	return args, nil
}
