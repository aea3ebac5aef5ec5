// Command checkpoint measures Accelerator.SaveState and SaveModel beside
// their peer, a raw write (write + fsync + rename) of the same number of
// bytes, in the same run, and prints the throughput ratios. Part of
// `make bench`; never run by the tests.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/goaccel/goaccel/accelerate"
	"github.com/goaccel/goaccel/accelerate/nn"
)

func main() {
	width := flag.Int("width", 1024, "hidden width of the MLP (parameters ≈ 2·width²)")
	reps := flag.Int("reps", 5, "repetitions (the median is reported)")
	flag.Parse()
	if err := run(*width, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoint bench:", err)
		os.Exit(1)
	}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// rawWrite writes n bytes to a file durably, as the checkpoint does.
func rawWrite(dir string, buf []byte) error {
	tmp := filepath.Join(dir, ".raw.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "raw.bin"))
}

func run(width, reps int) error {
	root, err := os.MkdirTemp("", "goaccel-ckpt-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	acc, err := accelerate.NewAccelerator(accelerate.WithProjectConfiguration(accelerate.ProjectConfiguration{
		ProjectDir: root, AutomaticCheckpointNaming: true, TotalLimit: 1}))
	if err != nil {
		return err
	}
	model, err := nn.NewMLP([]int{width, width, width, 2}, nn.Tanh, 1)
	if err != nil {
		return err
	}
	opt := nn.NewAdam(model, 1e-3)
	opt.Step() // moments exist: the optimizer state is twice the model
	if _, err := acc.Prepare(model, opt); err != nil {
		return err
	}
	var save, saveModel, raw, rawModel []time.Duration
	var stateBytes, modelBytes int64
	for i := 0; i < reps; i++ {
		t0 := time.Now()
		if err := acc.SaveState(""); err != nil {
			return err
		}
		save = append(save, time.Since(t0))
		if stateBytes, err = dirBytes(acc.LatestCheckpoint()); err != nil {
			return err
		}
		mdir := filepath.Join(root, "model")
		t0 = time.Now()
		if err := acc.SaveModel(model, mdir, 0); err != nil {
			return err
		}
		saveModel = append(saveModel, time.Since(t0))
		if modelBytes, err = dirBytes(mdir); err != nil {
			return err
		}
		rdir := filepath.Join(root, "raw")
		os.MkdirAll(rdir, 0o755)
		buf := make([]byte, stateBytes)
		t0 = time.Now()
		if err := rawWrite(rdir, buf); err != nil {
			return err
		}
		raw = append(raw, time.Since(t0))
		t0 = time.Now()
		if err := rawWrite(rdir, buf[:modelBytes]); err != nil {
			return err
		}
		rawModel = append(rawModel, time.Since(t0))
	}
	mbps := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }
	s, r := median(save), median(raw)
	fmt.Printf("SaveState  %6.1f MB in %7.1f ms: %7.1f MB/s | raw write+fsync of the same bytes %7.1f ms: %7.1f MB/s | ratio %.2f\n",
		float64(stateBytes)/1e6, s.Seconds()*1e3, mbps(stateBytes, s), r.Seconds()*1e3, mbps(stateBytes, r), r.Seconds()/s.Seconds())
	s, r = median(saveModel), median(rawModel)
	fmt.Printf("SaveModel  %6.1f MB in %7.1f ms: %7.1f MB/s | raw write+fsync of the same bytes %7.1f ms: %7.1f MB/s | ratio %.2f\n",
		float64(modelBytes)/1e6, s.Seconds()*1e3, mbps(modelBytes, s), r.Seconds()*1e3, mbps(modelBytes, r), r.Seconds()/s.Seconds())
	return acc.EndTraining()
}
