package profiler

import "github.com/goaccel/goaccel/accelerate/kwargs"

// Action is what the profiler does during a step (torch's ProfilerAction).
type Action int

// Actions.
const (
	None          Action = iota // not profiling
	Warmup                      // profiling, results discarded
	Record                      // recording
	RecordAndSave               // recording, last step of a cycle: the trace is ready after it
)

func (a Action) String() string {
	switch a {
	case None:
		return "NONE"
	case Warmup:
		return "WARMUP"
	case Record:
		return "RECORD"
	case RecordAndSave:
		return "RECORD_AND_SAVE"
	}
	return "Action(?)"
}

// Recording reports whether steps with this action are recorded.
func (a Action) Recording() bool { return a == Record || a == RecordAndSave }

// ScheduleAction is torch.profiler.schedule's function: the action for step
// (0-based). A nil schedule records every step (torch's default schedule).
func ScheduleAction(s *kwargs.Schedule, step int) Action {
	if s == nil {
		return Record
	}
	if step < 0 {
		return None
	}
	if step < s.SkipFirst {
		return None
	}
	step -= s.SkipFirst
	if s.SkipFirstWait != 0 {
		step += s.Wait
	}
	n := s.Wait + s.Warmup + s.Active
	if n <= 0 {
		return None
	}
	if s.Repeat > 0 && step/n >= s.Repeat {
		return None
	}
	m := step % n
	switch {
	case m < s.Wait:
		return None
	case m < s.Wait+s.Warmup:
		return Warmup
	case m < n-1:
		return Record
	}
	return RecordAndSave
}

// ActiveSteps lists the recorded steps among the first n.
func ActiveSteps(s *kwargs.Schedule, n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if ScheduleAction(s, i).Recording() {
			out = append(out, i)
		}
	}
	return out
}
