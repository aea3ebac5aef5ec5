// Package timeit is the part of %timeit and %%timeit that runs no code:
// their options (IPython's), the Go function the timed statements become
// (built once, called with a loop count), the choice of that count, and
// IPython's report. The engine builds the function and calls it as a
// cell's code.
package timeit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Options are %timeit's flags, as IPython's.
type Options struct {
	// Number is the loops per repetition (-n); 0 chooses it (Autorange).
	Number int
	// Repeat is the repetitions (-r, default 7).
	Repeat int
	// Precision is the significant digits shown (-p, default 3).
	Precision int
	// Quiet prints nothing (-q); Return makes the result the cell's (-o).
	Quiet, Return bool
}

// Usage is the synopsis shown with an error in the options.
const Usage = "%timeit [-n N] [-r R] [-p P] [-q] [-o] STATEMENT  (or %%timeit [options] [SETUP] with the statements below)"

// ParseArgs splits %timeit's argument into its options and the statement
// that follows them; rest is where the statement starts in arg (bytes).
func ParseArgs(arg string) (opts Options, rest int, err error) {
	opts = Options{Repeat: 7, Precision: 3}
	i := 0
	for {
		for i < len(arg) && (arg[i] == ' ' || arg[i] == '\t') {
			i++
		}
		if i+1 >= len(arg) || arg[i] != '-' || !strings.ContainsRune("nrpqo", rune(arg[i+1])) {
			return opts, i, nil
		}
		// A flag is -X alone or -XVALUE / -X VALUE; a statement such as
		// -x (a negation) is not one of these letters followed by a blank
		// or a digit.
		flag := arg[i+1]
		j := i + 2
		if flag == 'q' || flag == 'o' {
			if j < len(arg) && arg[j] != ' ' && arg[j] != '\t' {
				return opts, i, nil
			}
			opts.Quiet = opts.Quiet || flag == 'q'
			opts.Return = opts.Return || flag == 'o'
			i = j
			continue
		}
		for j < len(arg) && (arg[j] == ' ' || arg[j] == '\t') {
			j++
		}
		k := j
		for k < len(arg) && arg[k] != ' ' && arg[k] != '\t' {
			k++
		}
		if j == i+2 && j < len(arg) && (arg[j] < '0' || arg[j] > '9') {
			return opts, i, nil // -nx...: a statement, not a flag
		}
		n, perr := strconv.Atoi(arg[j:k])
		if perr != nil || n < 1 {
			return opts, i, fmt.Errorf("-%c needs a positive whole number, not %q (%s)", flag, arg[j:k], Usage)
		}
		switch flag {
		case 'n':
			opts.Number = n
		case 'r':
			opts.Repeat = n
		case 'p':
			opts.Precision = n
		}
		i = k
	}
}

// Timer runs the timed statements n times and says how long that took.
type Timer func(n int) (time.Duration, error)

// MinTotal is how long one repetition should take when the loop count is
// chosen: IPython's 0.2 s.
const MinTotal = 200 * time.Millisecond

// Autorange chooses the loop count as IPython does: the first power of ten
// (up to 10⁹) whose loops take at least MinTotal.
func Autorange(t Timer) (int, error) {
	n := 1
	for i := 0; i < 10; i++ {
		n = int(math.Pow10(i))
		d, err := t(n)
		if err != nil {
			return 0, err
		}
		if d >= MinTotal {
			break
		}
	}
	return n, nil
}

// Result is what %timeit measured: Loops runs of the statements in each of
// len(Runs) repetitions, each repetition's total time.
type Result struct {
	Loops     int
	Runs      []time.Duration
	Precision int
}

// PerLoop are the repetitions' times per loop, in seconds.
func (r Result) PerLoop() []float64 {
	out := make([]float64, len(r.Runs))
	for i, d := range r.Runs {
		out[i] = d.Seconds() / float64(r.Loops)
	}
	return out
}

// Average is the mean time per loop (seconds), Stdev its population
// standard deviation over the repetitions (as IPython's TimeitResult).
func (r Result) Average() float64 {
	var s float64
	t := r.PerLoop()
	for _, x := range t {
		s += x
	}
	return s / float64(len(t))
}

func (r Result) Stdev() float64 {
	m := r.Average()
	var s float64
	t := r.PerLoop()
	for _, x := range t {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(t)))
}

// Best and Worst are the fastest and slowest repetitions' time per loop.
func (r Result) Best() float64 {
	b := math.Inf(1)
	for _, x := range r.PerLoop() {
		b = math.Min(b, x)
	}
	return b
}

func (r Result) Worst() float64 {
	w := 0.0
	for _, x := range r.PerLoop() {
		w = math.Max(w, x)
	}
	return w
}

// String is IPython's line: "1.23 µs ± 4.5 ns per loop (mean ± std. dev.
// of 7 runs, 1,000,000 loops each)".
func (r Result) String() string {
	p := r.Precision
	if p < 1 {
		p = 3
	}
	return fmt.Sprintf("%s ± %s per loop (mean ± std. dev. of %d run%s, %s loop%s each)",
		FormatTime(r.Average(), p), FormatTime(r.Stdev(), p), len(r.Runs), plural(len(r.Runs)),
		thousands(r.Loops), plural(r.Loops))
}

// CachingWarning is IPython's note when the slowest repetition took over
// four times the fastest (and over a microsecond per loop), or "".
func (r Result) CachingWarning() string {
	best, worst := r.Best(), r.Worst()
	if best > 0 && worst > 4*best && worst > 1e-6 {
		return fmt.Sprintf("The slowest run took %0.2f times longer than the fastest. This could mean that an intermediate result is being cached.", worst/best)
	}
	return ""
}

// FormatTime writes a time in seconds as IPython does: precision
// significant digits in s, ms, µs or ns, and from a minute on in d, h, min
// and s.
func FormatTime(seconds float64, precision int) string {
	if seconds >= 60 {
		var parts []string
		left := seconds
		for _, u := range []struct {
			name string
			len  float64
		}{{"d", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}} {
			v := math.Floor(left / u.len)
			if v > 0 {
				parts = append(parts, fmt.Sprintf("%g%s", v, u.name))
				left -= v * u.len
			}
			if left < 1 {
				break
			}
		}
		return strings.Join(parts, " ")
	}
	units := []string{"s", "ms", "µs", "ns"}
	scale := []float64{1, 1e3, 1e6, 1e9}
	order := 3
	if seconds > 0 {
		order = min(-int(math.Floor(math.Floor(math.Log10(seconds))/3)), 3)
		order = max(order, 0)
	}
	return strconv.FormatFloat(seconds*scale[order], 'g', precision, 64) + " " + units[order]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
