package kernel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultHistoryPath is where history is kept when Options.HistoryPath is
// empty: $XDG_DATA_HOME/goaccel/history.jsonl, else
// ~/.local/share/goaccel/history.jsonl.
func DefaultHistoryPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "goaccel", "history.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("history: no home directory for the default path: %w", err)
	}
	return filepath.Join(home, ".local", "share", "goaccel", "history.jsonl"), nil
}

// histEntry is one line of the history file. A line with Start set and no
// Line marks the start of a session, so that a restarted kernel that ran no
// cell still takes a new session number.
type histEntry struct {
	Session int     `json:"session"`
	Line    int     `json:"line,omitempty"`
	Input   string  `json:"input,omitempty"`
	Output  *string `json:"output,omitempty"`
	Start   string  `json:"start,omitempty"`
}

// history is the execution history: append-only JSON lines in a file,
// all loaded in memory. Sessions are numbered from 1; each kernel start is
// a new session.
type history struct {
	mu      sync.Mutex
	path    string // "" when kept in memory only
	entries []histEntry
	session int
}

// openHistory loads path (creating it and its directory as needed) and
// starts a new session. With path "" history lives in memory only.
func openHistory(path string) (*history, []error, error) {
	h := &history{path: path}
	var warnings []error
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, nil, fmt.Errorf("history %s: %w", path, err)
		}
		f, err := os.Open(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, nil, fmt.Errorf("history %s: %w", path, err)
		default:
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			n := 0
			for sc.Scan() {
				n++
				var e histEntry
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Session <= 0 {
					warnings = append(warnings, fmt.Errorf("history %s line %d: skipped: not a history entry", path, n))
					continue
				}
				h.session = max(h.session, e.Session)
				if e.Line > 0 {
					h.entries = append(h.entries, e)
				}
			}
			err = sc.Err()
			f.Close()
			if err != nil {
				return nil, nil, fmt.Errorf("history %s: %w", path, err)
			}
		}
	}
	h.session++
	if err := h.append(histEntry{Session: h.session, Start: time.Now().UTC().Format(time.RFC3339)}); err != nil {
		return nil, nil, err
	}
	return h, warnings, nil
}

func (h *history) append(e histEntry) error {
	if h.path == "" {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("history %s: %w", h.path, err)
	}
	_, err = f.Write(append(b, '\n')) // one write: appends from two kernels do not interleave
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("history %s: %w", h.path, err)
	}
	return nil
}

// add records one cell of the current session.
func (h *history) add(line int, input string, output *string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := histEntry{Session: h.session, Line: line, Input: input, Output: output}
	h.entries = append(h.entries, e)
	return h.append(e)
}

// tail is the last n entries (all when n <= 0), oldest first. With unique,
// only the latest entry of each distinct input counts.
func (h *history) tail(n int, unique bool) []histEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return lastN(h.entries, n, unique, nil)
}

// rangeOf is session's entries with start <= line < stop (stop <= 0: no
// upper bound). session 0 is the current session, negative ones count back.
func (h *history) rangeOf(session, start, stop int) []histEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if session <= 0 {
		session += h.session
	}
	var out []histEntry
	for _, e := range h.entries {
		if e.Session == session && e.Line >= start && (stop <= 0 || e.Line < stop) {
			out = append(out, e)
		}
	}
	return out
}

// search is the entries whose input matches the glob pattern (fnmatch
// semantics: * ? [seq] [!seq], case-sensitive, whole input), the last n of
// them when n > 0, oldest first.
func (h *history) search(pattern string, n int, unique bool) []histEntry {
	if pattern == "" {
		pattern = "*"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return lastN(h.entries, n, unique, func(e histEntry) bool { return globMatch(pattern, e.Input) })
}

func lastN(entries []histEntry, n int, unique bool, keep func(histEntry) bool) []histEntry {
	var rev []histEntry
	seen := map[string]bool{}
	for i := len(entries) - 1; i >= 0 && (n <= 0 || len(rev) < n); i-- {
		e := entries[i]
		if keep != nil && !keep(e) {
			continue
		}
		if unique {
			if seen[e.Input] {
				continue
			}
			seen[e.Input] = true
		}
		rev = append(rev, e)
	}
	out := make([]histEntry, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// globMatch reports whether s matches pattern with Python fnmatchcase
// rules: * matches any run (newlines and slashes included), ? one rune,
// [abc] [a-z] [!abc] one rune from (or not from) a set; an unclosed [ is a
// literal.
func globMatch(pattern, s string) bool {
	p := []rune(pattern)
	r := []rune(s)
	// Iterative matcher with backtracking to the last star.
	pi, si := 0, 0
	starP, starS := -1, -1
	for si < len(r) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				pi++
				si++
				continue
			case '[':
				if ok, next, valid := matchClass(p, pi, r[si]); valid {
					if ok {
						pi = next
						si++
						continue
					}
				} else if r[si] == '[' {
					pi++
					si++
					continue
				}
			default:
				if p[pi] == r[si] {
					pi++
					si++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchClass matches c against the class starting at p[i] == '['. valid is
// false when the class is not closed (then '[' is a literal).
func matchClass(p []rune, i int, c rune) (ok bool, next int, valid bool) {
	j := i + 1
	negate := false
	if j < len(p) && p[j] == '!' {
		negate = true
		j++
	}
	first := true
	for j < len(p) && (first || p[j] != ']') {
		first = false
		lo := p[j]
		hi := lo
		if j+2 < len(p) && p[j+1] == '-' && p[j+2] != ']' {
			hi = p[j+2]
			j += 2
		}
		if lo <= c && c <= hi {
			ok = true
		}
		j++
	}
	if j >= len(p) {
		return false, 0, false
	}
	return ok != negate, j + 1, true
}
