package amp

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goaccel/goaccel/accelerate/kwargs"
)

func TestFloat16KnownValues(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},                                // max half
		{65519, 0x7bff},                                // below the rounding midpoint
		{65520, 0x7c00},                                // midpoint rounds (to even) to Inf
		{1e6, 0x7c00},                                  // overflow
		{float32(math.Inf(-1)), 0xfc00},                // -Inf
		{float32(math.Ldexp(1, -14)), 0x0400},          // min normal
		{float32(math.Ldexp(1, -24)), 0x0001},          // min subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},          // tie → even (0)
		{float32(math.Ldexp(3, -25)), 0x0002},          // 1.5 units → tie → even (2)
		{float32(math.Ldexp(1, -25) * 1.0001), 0x0001}, // just above the tie
		{float32(1 + math.Ldexp(1, -11)), 0x3c00},      // tie → even mantissa
		{float32(1 + 3*math.Ldexp(1, -11)), 0x3c02},    // tie → even (up)
		{float32(math.Ldexp(1023, -24) + math.Ldexp(1, -25)), 0x0400}, // subnormal rounding carries into normal
		{0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := Float32ToFloat16(c.f); got != c.h {
			t.Errorf("Float32ToFloat16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := Float32ToFloat16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN → %#04x", h)
	}
	if f := Float16ToFloat32(0x7e00); !math.IsNaN(float64(f)) {
		t.Errorf("half NaN → %v", f)
	}
	if Float16ToFloat32(0x0001) != float32(math.Ldexp(1, -24)) || Float16ToFloat32(0xfbff) != -65504 {
		t.Error("decode of subnormal / max wrong")
	}
}

// Every finite half value survives a round trip, and rounding picks the
// nearest representable value (ties to an even mantissa).
func TestFloat16RoundTripAndNearest(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN
		}
		if got := Float32ToFloat16(Float16ToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip %#04x → %v → %#04x", h, Float16ToFloat32(uint16(h)), got)
		}
	}
	checkNearest(t, "fp16", Float32ToFloat16, Float16ToFloat32, 65520) // beyond the midpoint above 65504: Inf
	checkNearest(t, "bf16", Float32ToBFloat16, BFloat16ToFloat32, math.Ldexp(2-1.0/256, 127))
}

func checkNearest(t *testing.T, name string, enc func(float32) uint16, dec func(uint16) float32, maxFinite float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		var f float32
		switch i % 3 {
		case 0:
			f = float32(rng.NormFloat64() * 100)
		case 1:
			f = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(40)-30))
		default:
			f = math.Float32frombits(rng.Uint32())
		}
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || math.Abs(float64(f)) >= maxFinite {
			continue
		}
		h := enc(f)
		r := float64(dec(h))
		// Neighbours of h (same sign direction): h-1 and h+1 in magnitude.
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7fff == 0x7fff || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			n := float64(dec(nb))
			if math.IsNaN(n) || math.IsInf(n, 0) {
				continue
			}
			dr, dn := math.Abs(float64(f)-r), math.Abs(float64(f)-n)
			if dn < dr || (dn == dr && h&1 == 1) {
				t.Fatalf("%s: %g (%#08x) → %g (%#04x) but %g (%#04x) is nearer or the even tie", name, f, math.Float32bits(f), r, h, n, nb)
			}
		}
	}
}

func TestBFloat16KnownValues(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80},
		{-1, 0xbf80},
		{float32(1 + math.Ldexp(1, -8)), 0x3f80},   // tie → even
		{float32(1 + 3*math.Ldexp(1, -8)), 0x3f82}, // tie → even (up)
		{float32(1 + math.Ldexp(1, -8) + math.Ldexp(1, -20)), 0x3f81},
		{math.MaxFloat32, 0x7f80}, // rounds up to Inf
		{float32(math.Inf(1)), 0x7f80},
		{3.140625, 0x4049},
	}
	for _, c := range cases {
		if got := Float32ToBFloat16(c.f); got != c.h {
			t.Errorf("Float32ToBFloat16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := Float32ToBFloat16(math.Float32frombits(0x7f800001)); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("NaN with low payload → %#04x (must stay NaN)", h)
	}
	buf := []float32{0.1, 1000.3}
	RoundBF16Slice(buf)
	if buf[0] != BFloat16ToFloat32(Float32ToBFloat16(0.1)) || buf[1] != 1000 {
		t.Errorf("RoundBF16Slice = %v", buf)
	}
	b64 := []float64{0.1}
	Simulate64(FP16, b64)
	if b64[0] != float64(RoundFP16(0.1)) {
		t.Errorf("Simulate64 = %v", b64)
	}
	b32 := []float32{0.1}
	Simulate(No, b32)
	if b32[0] != 0.1 {
		t.Error("Simulate(no) changed the value")
	}
	if p, err := ParsePrecision("BF16"); p != BF16 || err != nil {
		t.Error(p, err)
	}
	if _, err := ParsePrecision("fp4"); err == nil {
		t.Error("fp4 accepted")
	}
}

func newScaler(t *testing.T, k kwargs.GradScalerKwargs) *GradScaler {
	t.Helper()
	s, err := NewGradScaler(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGradScalerOverflowAndGrowth(t *testing.T) {
	s := newScaler(t, kwargs.GradScalerKwargs{GrowthInterval: 3})
	if s.GetScale() != 65536 || s.Scale(2) != 131072 {
		t.Fatalf("scale %v", s.GetScale())
	}
	stepsRun := 0
	opt := func() { stepsRun++ }

	// Clean step: gradients divided by the scale, step runs.
	g := [][]float64{{65536, -131072}, {32768}}
	if s.Unscale(g) {
		t.Fatal("found inf in clean grads")
	}
	if g[0][0] != 1 || g[0][1] != -2 || g[1][0] != 0.5 {
		t.Fatalf("unscaled %v", g)
	}
	if ok, err := s.Step(opt); !ok || err != nil || stepsRun != 1 {
		t.Fatalf("clean step: %v %v %d", ok, err, stepsRun)
	}

	// Inf: skipped, scale backs off, growth tracker resets.
	if !s.Unscale([][]float64{{1, math.Inf(1)}}) {
		t.Fatal("inf not found")
	}
	if ok, err := s.Step(opt); ok || err != nil || stepsRun != 1 {
		t.Fatalf("inf step ran: %v %v", ok, err)
	}
	if st := s.State(); st.Scale != 32768 || st.GrowthTracker != 0 || st.SkippedSteps != 1 || st.Steps != 2 {
		t.Fatalf("after inf: %+v", st)
	}

	// NaN in one of several gradient sets.
	s.Unscale([][]float64{{1}})
	s.Unscale32([][]float32{{float32(math.NaN())}})
	if ok, _ := s.Step(opt); ok || s.GetScale() != 16384 {
		t.Fatalf("NaN step: ran=%v scale=%v", ok, s.GetScale())
	}

	// Growth after GrowthInterval (3) clean steps, not before.
	for i := 1; i <= 3; i++ {
		s.Unscale([][]float64{{1}})
		if ok, _ := s.Step(opt); !ok {
			t.Fatal("clean step skipped")
		}
		want := 16384.0
		if i == 3 {
			want = 32768
		}
		if s.GetScale() != want {
			t.Fatalf("after %d clean steps scale %v, want %v", i, s.GetScale(), want)
		}
	}
	if st := s.State(); st.GrowthTracker != 0 || stepsRun != 4 {
		t.Fatalf("tracker %d steps %d", st.GrowthTracker, stepsRun)
	}

	// Step without Unscale.
	if ok, err := s.Step(opt); ok || !errors.Is(err, ErrNotUnscaled) {
		t.Fatalf("step without unscale: %v %v", ok, err)
	}
	// Overflow of the scale itself is refused (stays finite).
	big := newScaler(t, kwargs.GradScalerKwargs{InitScale: math.MaxFloat64, GrowthInterval: 1})
	big.Unscale(nil)
	big.Step(nil)
	if math.IsInf(big.GetScale(), 0) {
		t.Fatal("scale grew to Inf")
	}
}

func TestGradScalerDisabled(t *testing.T) {
	s := newScaler(t, kwargs.GradScalerKwargs{Enabled: kwargs.Bool(false)})
	if s.Scale(3) != 3 || s.GetScale() != 1 || s.IsEnabled() {
		t.Fatal("disabled scaler scales")
	}
	g := [][]float64{{4}}
	s.Unscale(g)
	if g[0][0] != 4 {
		t.Fatal("disabled scaler unscaled")
	}
	ran := false
	if ok, err := s.Step(func() { ran = true }); !ok || err != nil || !ran {
		t.Fatal("disabled scaler skipped the step")
	}
	// Even with inf, a disabled scaler passes through (like torch's).
	s.Unscale([][]float64{{math.Inf(1)}})
	if ok, _ := s.Step(nil); !ok || s.State().Scale != 65536 {
		t.Fatal("disabled scaler reacted to inf")
	}
	if _, err := NewGradScaler(kwargs.GradScalerKwargs{GrowthFactor: 1}); err == nil {
		t.Fatal("growth factor 1 accepted")
	}
	if err := s.LoadState(ScalerState{Scale: 0}); err == nil {
		t.Fatal("zero scale accepted")
	}
}

// Another process's verdict (AddFoundInf, sharded gradients) skips the
// step as an inf found here does; a clean verdict changes nothing.
func TestGradScalerAddFoundInf(t *testing.T) {
	s := newScaler(t, kwargs.GradScalerKwargs{InitScale: 1024})
	ran := 0
	s.Unscale32([][]float32{{1024, 2048}})
	s.AddFoundInf(false)
	if ok, err := s.Step(func() { ran++ }); !ok || err != nil || ran != 1 {
		t.Fatalf("a clean verdict from elsewhere: stepped %v, %v", ok, err)
	}
	s.Unscale32([][]float32{{1024, 2048}}) // clean here
	s.AddFoundInf(true)                    // inf in another process's share
	if ok, err := s.Step(func() { ran++ }); ok || err != nil || ran != 1 || s.GetScale() != 512 {
		t.Fatalf("an inf found elsewhere: stepped %v, %v, scale %v", ok, err, s.GetScale())
	}
}
