// Package aim is goaccel's Aim tracker. Aim keeps runs in RocksDB databases
// with its own encoding that only Aim's Python SDK writes (its remote
// tracking server, too, is remote calls on Python SDK objects), so this
// package drives the user's installed aim package through a bridge.
//
// # The bridge
//
// Start launches one long-lived Python process — $GOACCEL_AIM_PYTHON, else
// $GOACCEL_VENV/bin/python, else python3 — running the script embedded from
// bridge.py. Its first stdin line opens the run:
// aim.Run(repo=<logging dir, default ".">, experiment=<"experiment" init
// kwarg, else the run name>, **other init kwargs), with run.name set to the
// run name (as Accelerate's AimTracker); the repository is created if
// needed. Start waits for the reply carrying the run hash, or returns the
// Python side's error (aim missing: "the aim tracker needs the Python
// package aim (pip install aim) ...", with the interpreter's stderr).
//
// Every later call becomes one JSON line — {"op":"hparams","values":…} or
// {"op":"track","name":…,"value":…,"step":…,"epoch":…,"context":…} — put on
// an unbounded queue that a writer goroutine feeds to the process, so Log
// never waits for Python; a reader goroutine collects the per-request
// acknowledgements and logs each failure as a warning. Finish sends
// {"op":"close"}, closes stdin and waits for the process: the bridge calls
// run.close() and then indexes the run (Aim otherwise indexes lazily, in
// `aim up` or `aim storage reindex`), so aim.Repo(dir).iter_runs() lists it
// at once. Finish returns an error listing requests that failed in Python,
// a non-zero exit, or a missing close acknowledgement. If the Go process
// dies, the bridge sees end of input and closes the run the same way.
// Aim writes each tracked value to RocksDB as it arrives.
//
// # Values
//
// StoreInitConfiguration sets run["hparams"] (as Accelerate). Log tracks
// numbers as metrics, strings as aim.Text sequences, and a map of numbers as
// metric <key> with context {"subset": <inner key>}; other values are
// skipped with a logrus warning naming the key. Without a step Aim numbers
// the values itself. Log kwargs "context" (merged into every value's
// context) and "epoch" are passed to Run.track, as Accelerate passes its
// log kwargs.
//
// # Images
//
// LogImages follows Accelerate's AimTracker.log_images: each value (an
// image, PNG bytes, or []any{image, "caption"}) is sent to the bridge as
// PNG, opened with PIL and tracked as aim.Image(img, caption=...,
// **aim_image) with run.track(..., **track); kwargs "aim_image" (caption,
// format, quality, optimize) and "track" (context, epoch) are Accelerate's.
// A list is tracked as one list of aim.Images per step. Bad values and
// kwargs are errors naming the key; there is no LogTable.
//
// MainProcessOnly is true and RequiresLoggingDirectory true, as for
// Accelerate's AimTracker.
package aim
