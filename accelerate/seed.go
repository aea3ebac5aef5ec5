package accelerate

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
)

// rngState is goaccel's process-wide random generator (torch's default
// generator): a PCG that SetSeed seeds and SaveState/LoadState save and
// restore with every process's checkpoint. It is deliberate global state,
// like the process state and like the generators Accelerate's set_seed
// seeds.
var rngState = func() *processRNG {
	var b [16]byte
	crand.Read(b[:])
	src := rand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]))
	return &processRNG{src: src, rand: rand.New(src)}
}()

type processRNG struct {
	mu   sync.Mutex
	src  *rand.PCG
	rand *rand.Rand
}

// RNG is goaccel's process-wide random generator (math/rand/v2 over a PCG):
// seeded by SetSeed, saved in every process's checkpoint by SaveState and
// restored by LoadState, so that a resumed run draws the same numbers as an
// uninterrupted one. Use it for data order, dropout and the like. It is not
// safe for concurrent use (draw from the training goroutine).
func RNG() *rand.Rand { return rngState.rand }

// SetSeed is Accelerate's set_seed: it seeds every generator goaccel and
// cells use — goaccel's RNG and math/rand's global source (rand.Intn,
// rand.Float64, ... of math/rand; the goaccel binary and this module's
// tests enable rand.Seed with the randseednop=0 setting in go.mod). With
// deviceSpecific, the seed is seed + the process index, so that processes
// draw different numbers. math/rand/v2's global functions cannot be seeded
// by any program; draw from RNG() (or a generator of your own) instead.
func SetSeed(seed int64, deviceSpecific bool) {
	if deviceSpecific {
		seed += int64(processIndex())
	}
	rngState.mu.Lock()
	rngState.src.Seed(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)
	rngState.mu.Unlock()
	mrand.Seed(seed) //nolint:staticcheck // seeding the global source is the point
}

// processIndex is the rank of this process: the process state's, else the
// launcher's RANK (0 outside a launch).
func processIndex() int {
	registry.mu.Lock()
	st := registry.state
	registry.mu.Unlock()
	if st != nil {
		return st.env.rank
	}
	r, err := strconv.Atoi(strings.TrimSpace(os.Getenv(EnvRank)))
	if err != nil {
		return 0
	}
	return r
}

func rngMarshal() ([]byte, error) {
	rngState.mu.Lock()
	defer rngState.mu.Unlock()
	return rngState.src.MarshalBinary()
}

func rngUnmarshal(b []byte) error {
	rngState.mu.Lock()
	defer rngState.mu.Unlock()
	if err := rngState.src.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("accelerate: restoring the random generator: %w", err)
	}
	return nil
}
