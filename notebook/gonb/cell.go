package gonb

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Cell is a cell of GoNB's language split into what the kernel runs
// before the Go code (Commands), what replaces the cell (Magic), and the
// Go code itself.
type Cell struct {
	// Magic is a cell magic on the first line (%%writefile, %%script,
	// %%bash, %%sh): the rest of the cell is its input, not Go.
	Magic *CellMagic
	// Commands are the cell's % and ! lines other than the main markers,
	// in order (GoNB runs them all before the Go code, wherever they are).
	Commands []Command
	// Main is the cell's %% (or %main, %exec) line, nil when there is none.
	Main *Main
	// Code is the Go code: command lines blanked (positions are the
	// cell's), a %% line replaced by the start of func main and its
	// closing brace appended, %exec's func main on its line.
	Code string
	// Inits are the init_NAME functions the cell declares: GoNB runs them
	// as init functions.
	Inits []string
}

// initFunc matches the first line of an init_NAME function.
var initFunc = regexp.MustCompile(`^func\s+(init_[\p{L}\p{N}_]+)\s*\(\s*\)\s*\{`)

// Command is one % or ! line.
type Command struct {
	// Line is the 1-based line in the cell.
	Line int
	// Text starts with % or ! (a //gonb: prefix is removed). Lines ending
	// in a backslash continue on the next line: for ! lines the backslash
	// and the line break are kept, as sh reads them; for % lines they are
	// replaced by a space, as GoNB does.
	Text string
	// Leading reports a command before any Go code of the cell (where
	// goaccel's own magics, such as %time CODE, may stand).
	Leading bool
}

// Main is a cell's %% / %main / %exec line: the rest of the cell (or the
// function %exec names) runs as func main, after flag.Parse, with Args as
// os.Args[1:].
type Main struct {
	Line int
	Args []string
	// Exec is the function %exec calls ("" for %% and %main).
	Exec string
}

// CellMagic is a cell magic: Name is writefile, script, bash or sh; Body
// is the cell after the first line.
type CellMagic struct {
	Name string
	Args []string
	Body string
}

// cellMagics are the magics that take the whole cell (GoNB's
// CellSpecialCommands).
var cellMagics = map[string]bool{"writefile": true, "script": true, "bash": true, "sh": true}

// IsCellMagic reports whether %%name is one of GoNB's cell magics.
func IsCellMagic(name string) bool { return cellMagics[name] }

// commentPrefix lets a command be written as a Go comment (//gonb:%%).
const commentPrefix = "//gonb:"

// Parse splits a cell written in GoNB's language (which includes
// goaccel's own magics: they are commands too). A command is a line that
// starts with % or ! at its first column (or after //gonb:), outside
// string literals and comments of the Go code; before any Go code, a
// command may be indented. A %% line (or %main) starts func main: the
// lines after it are its body. %%writefile, %%script, %%bash and %%sh must
// be the first line.
func Parse(src string) (*Cell, error) {
	lines := strings.Split(src, "\n")
	c := &Cell{}
	if m, ok := cellMagic(lines); ok {
		c.Magic = m
		return c, nil
	}
	code := make([]string, len(lines))
	copy(code, lines)
	var lx lexer
	seenCode := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		text, isCmd := commandText(line, !seenCode)
		if !isCmd || lx.inside() {
			if m := initFunc.FindStringSubmatch(line); m != nil && !lx.inside() {
				c.Inits = append(c.Inits, m[1])
			}
			lx.scan(line)
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				seenCode = true
			}
			continue
		}
		first := i
		// Continuation lines.
		for endsInBackslash(text) && i+1 < len(lines) {
			i++
			next := strings.TrimPrefix(strings.TrimRight(lines[i], "\r"), commentPrefix)
			if text[0] == '!' {
				text += "\n" + next
			} else {
				text = text[:len(text)-1] + " " + next
			}
			code[i] = ""
		}
		code[first] = ""
		name, arg := commandName(text)
		switch {
		case text[0] == '%' && (name == "%" || name == "main"):
			if c.Main != nil {
				return nil, fmt.Errorf("line %d: a second %s: a cell has one func main", first+1, strings.Fields(text)[0])
			}
			args, err := SplitArgs(arg)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", first+1, strings.Fields(text)[0], err)
			}
			c.Main = &Main{Line: first + 1, Args: args}
			code[first] = "func main() {"
		case text[0] == '%' && name == "exec":
			if c.Main != nil {
				return nil, fmt.Errorf("line %d: %%exec after another func main marker: a cell has one func main", first+1)
			}
			args, err := SplitArgs(arg)
			if err != nil {
				return nil, fmt.Errorf("line %d: %%exec: %v", first+1, err)
			}
			if len(args) == 0 || !isIdent(args[0]) {
				return nil, fmt.Errorf("line %d: %%exec needs the name of a function to call: %%exec f [ARGS...]", first+1)
			}
			c.Main = &Main{Line: first + 1, Args: args[1:], Exec: args[0]}
			code[first] = "func main() { " + args[0] + "() }"
		case text[0] == '%' && strings.HasPrefix(text, "%%") && cellMagics[name[1:]]:
			return nil, fmt.Errorf("%q can only appear at the start of the cell (line %d)", "%%"+name[1:], first+1)
		default:
			c.Commands = append(c.Commands, Command{Line: first + 1, Text: text, Leading: !seenCode})
		}
	}
	if c.Main != nil && c.Main.Exec == "" {
		code = append(code, "}")
	}
	c.Code = strings.Join(code, "\n")
	return c, nil
}

// cellMagic recognizes a cell magic on the cell's first line.
func cellMagic(lines []string) (*CellMagic, bool) {
	first := strings.TrimPrefix(strings.TrimSpace(lines[0]), commentPrefix)
	if !strings.HasPrefix(first, "%%") {
		return nil, false
	}
	f := strings.Fields(first[2:])
	if len(f) == 0 || !cellMagics[f[0]] {
		return nil, false
	}
	args, err := SplitArgs(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(first[2:]), f[0])))
	if err != nil {
		args = f[1:]
	}
	return &CellMagic{Name: f[0], Args: args, Body: strings.Join(lines[1:], "\n")}, true
}

// commandText returns the command on line, when it is one: % or ! at
// column 0, after //gonb:, or (leading) after blanks.
func commandText(line string, leading bool) (string, bool) {
	l := strings.TrimRight(line, "\r")
	if strings.HasPrefix(l, commentPrefix) {
		l = l[len(commentPrefix):]
	} else if leading {
		l = strings.TrimLeft(l, " \t")
	}
	if len(l) < 2 || (l[0] != '%' && l[0] != '!') {
		return "", false
	}
	if l[0] == '!' && (l[1] == '=' || strings.TrimSpace(l[1:]) == "") {
		return "", false
	}
	return l, true
}

// commandName is the command's name (without its %) and argument: "%%"
// (main) has name "%", "%% --x=1" name "%" and argument "--x=1",
// "%%writefile f" name "%writefile".
func commandName(text string) (name, arg string) {
	if text[0] != '%' {
		return "!", text[1:]
	}
	rest := text[1:]
	if strings.HasPrefix(rest, "%") && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t') {
		return "%", strings.TrimSpace(rest[1:])
	}
	n, a, _ := strings.Cut(rest, " ")
	if i := strings.IndexByte(n, '\t'); i >= 0 {
		n, a = n[:i], n[i+1:]+" "+a
	}
	return n, strings.TrimSpace(a)
}

// Name returns a command's name: "help" for "%help", "%time" for
// "%%time", "!" for a shell line, "%" for a main marker.
func (c Command) Name() string {
	n, _ := commandName(c.Text)
	return n
}

// Arg returns what follows the command's name.
func (c Command) Arg() string {
	_, a := commandName(c.Text)
	return a
}

func endsInBackslash(s string) bool {
	s = strings.TrimRight(s, "\r")
	n := len(s) - len(strings.TrimRight(s, "\\"))
	return n%2 == 1
}

func isIdent(s string) bool {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && !(i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// lexer follows Go code line by line far enough to know whether the next
// line starts inside a raw string literal or a block comment, where a %
// or ! at the start of a line is text, not a command.
type lexer struct {
	raw, block bool
}

func (lx *lexer) inside() bool { return lx.raw || lx.block }

func (lx *lexer) scan(line string) {
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case lx.raw:
			if ch == '`' {
				lx.raw = false
			}
		case lx.block:
			if ch == '*' && i+1 < len(line) && line[i+1] == '/' {
				lx.block = false
				i++
			}
		case ch == '`':
			lx.raw = true
		case ch == '/' && i+1 < len(line) && line[i+1] == '/':
			return
		case ch == '/' && i+1 < len(line) && line[i+1] == '*':
			lx.block = true
			i++
		case ch == '"' || ch == '\'':
			// An interpreted string or rune ends on its line.
			for i++; i < len(line) && line[i] != ch; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		}
	}
}

// SplitArgs splits a command's arguments as GoNB does: blanks separate
// them; double quotes group (an empty "" is an empty argument), with \n,
// \t and \" escapes inside them; single quotes group too, literally.
func SplitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated \" quote")
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						cur.WriteByte('\n')
					case 't':
						cur.WriteByte('\t')
					default:
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(s[i])
			}
		case ch == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		default:
			inWord = true
			cur.WriteByte(ch)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
