package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goaccel/goaccel/accelerate/checkpoint"
	"github.com/goaccel/goaccel/accelerate/safetensors"
)

// runMergeWeights is Accelerate's merge-weights: `goaccel merge-weights
// CHECKPOINT OUTPUT [--remove_checkpoint_dir]` writes the models of a
// checkpoint SaveState wrote (whole, or in every process's shards with
// FSDP's SHARDED_STATE_DICT) as OUTPUT/model.safetensors (model_1.safetensors,
// ... for further models), the files Python's safetensors and transformers
// read.
func runMergeWeights(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge-weights", flag.ContinueOnError)
	fs.SetOutput(stderr)
	remove := fs.Bool("remove_checkpoint_dir", false, "remove the checkpoint once the weights are written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: goaccel merge-weights CHECKPOINT OUTPUT [--remove_checkpoint_dir]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errors.New("name the checkpoint directory and the output directory")
	}
	ckpt, out := pos[0], pos[1]
	man, err := checkpoint.ReadManifest(ckpt)
	if err != nil {
		return err
	}
	if len(man.Models) == 0 {
		return fmt.Errorf("the checkpoint %s holds no model", ckpt)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for i, m := range man.Models {
		base := "model"
		if i > 0 {
			base += "_" + strconv.Itoa(i)
		}
		ts, err := man.ReadTensors(ckpt, base, m.Shards)
		if err != nil {
			return fmt.Errorf("model %d: %w", i, err)
		}
		by := map[string]safetensors.Tensor{}
		for _, t := range ts {
			by[t.Name] = t
		}
		ordered := make([]safetensors.Tensor, 0, len(m.Names))
		for _, name := range m.Names {
			t, ok := by[name]
			if !ok {
				return fmt.Errorf("model %d: the checkpoint's files lack %s", i, name)
			}
			ordered = append(ordered, t)
		}
		path := filepath.Join(out, base+".safetensors")
		if err := safetensors.WriteFile(path, ordered, map[string]string{"format": "pt"}); err != nil {
			return err
		}
		from := "whole"
		if m.Shards > 0 {
			from = fmt.Sprintf("joined from %d processes' shards", m.Shards)
		}
		fmt.Fprintf(stdout, "wrote %s: %d tensors (%s)\n", path, len(ordered), from)
	}
	if *remove {
		return os.RemoveAll(ckpt)
	}
	return nil
}

// parseInterspersed parses args with fs, flags before, between and after
// the positional arguments (the flag package stops at the first of
// them), and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}
