// Package resumetest holds multi-process tests of the training loop's
// checkpointing: real worker processes started by the launcher (the test
// binary re-executed through launchertest), one of them killed mid-run and
// restarted with MaxRestarts, resuming from the newest checkpoint. It has
// no code of its own.
package resumetest
