package launcher

// FakeGPUs makes the launcher see GPUs with the given UUIDs (none: no GPU)
// and returns a function that restores the previous probe.
func FakeGPUs(uuids ...string) (restore func()) {
	return SetProbes(Probes{GPUs: func() ([]GPU, error) {
		var gs []GPU
		for i, u := range uuids {
			gs = append(gs, GPU{Index: i, UUID: u, Name: "fake"})
		}
		return gs, nil
	}})
}

// FakeKernelState fakes an Accelerator created, or a GPU bound, in this
// process.
func FakeKernelState(acceleratorInitialized, deviceBound bool) (restore func()) {
	return SetProbes(Probes{
		AcceleratorInitialized: func() bool { return acceleratorInitialized },
		DeviceBound:            func() bool { return deviceBound },
	})
}

// InterruptTerm exposes interruptTerm: how long after SIGINT an interrupted
// worker gets SIGTERM.
const InterruptTerm = interruptTerm

// ExpandPrefix exposes expandPrefix.
var ExpandPrefix = expandPrefix

// ParseSMI exposes parseSMI.
var ParseSMI = parseSMI
