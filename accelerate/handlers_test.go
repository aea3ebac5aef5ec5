package accelerate

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/pg"
)

func TestKwargsHandlerErrors(t *testing.T) {
	cases := []struct {
		opts []Option
		want string
	}{
		{[]Option{WithKwargsHandlers(kwargs.GradScalerKwargs{}, &kwargs.GradScalerKwargs{InitScale: 2})},
			"You can only pass one `GradScalerKwargs` in `kwargs_handlers`."},
		{[]Option{WithKwargsHandlers(kwargs.FP8RecipeKwargs{})},
			"Passing in an FP8 configuration requires setting `mixed_precision='fp8'`."},
		{[]Option{WithKwargsHandlers(kwargs.GradScalerKwargs{GrowthFactor: 0.5})},
			"kwargs_handlers[0] (GradScalerKwargs): The growth factor must be > 1.0."},
		{[]Option{WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Backend: "mpi"})},
			`kwargs_handlers[0] (InitProcessGroupKwargs): backend "mpi" is not available in goaccel: use "gloo" (CPU) or "nccl" (GPU)`},
	}
	for i, c := range cases {
		fresh(t)
		_, err := NewAccelerator(append([]Option{withEnv(envMap(nil))}, c.opts...)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("case %d: err = %v\nwant %s", i, err, c.want)
		}
		if StateInitialized() {
			t.Errorf("case %d: state left behind", i)
		}
	}
	fresh(t)
	_, err := NewAccelerator(withEnv(envMap(nil)), WithKwargsHandlers(42))
	if !errors.Is(err, kwargs.ErrUnsupportedHandler) || !strings.HasPrefix(err.Error(), "Unsupported kwargs handler passed: int (42)") {
		t.Fatalf("unsupported handler: %v", err)
	}
	// A second Accelerator sharing the state still checks its handlers.
	fresh(t)
	if _, err := NewAccelerator(withEnv(envMap(nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAccelerator(withEnv(envMap(nil)), WithKwargsHandlers(kwargs.FP8RecipeKwargs{})); err == nil || !strings.Contains(err.Error(), "requires setting `mixed_precision='fp8'`") {
		t.Fatalf("second Accelerator's FP8 handler: %v", err)
	}
}

func TestKwargsHandlersApplied(t *testing.T) {
	// FP8: accepted, with the honest note printed by the main process.
	fresh(t)
	var out bytes.Buffer
	a, err := NewAccelerator(withEnv(envMap(nil)), WithOutput(&out), WithMixedPrecision("fp8"), WithKwargsHandlers(&kwargs.FP8RecipeKwargs{}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "goaccel has no FP8 engine") || !a.KwargsHandlers().Has("FP8RecipeKwargs") {
		t.Fatalf("FP8 note: %q", out.String())
	}
	if r, ok := a.FP8Recipe(); !ok || r.Backend == "" || a.GradScaler() != nil {
		t.Fatalf("FP8Recipe = %+v, %v; scaler %v", r, ok, a.GradScaler())
	}

	// fp16 (GPU path): a scaler from GradScalerKwargs; the backend is nccl.
	fresh(t)
	out.Reset()
	a, err = NewAccelerator(withEnv(envMap(map[string]string{EnvCUDAVisible: "0"})), WithOutput(&out), WithMixedPrecision("fp16"),
		WithKwargsHandlers(kwargs.GradScalerKwargs{InitScale: 1024, GrowthInterval: 3}, kwargs.AutocastKwargs{Enabled: kwargs.Bool(false)}))
	if err != nil {
		t.Fatal(err)
	}
	if s := a.GradScaler(); s == nil || s.GetScale() != 1024 || !s.IsEnabled() || s.State().GrowthInterval != 3 {
		t.Fatalf("GradScaler = %+v", s)
	}
	if a.Autocast().IsEnabled() || a.AutocastEnabled() || !strings.Contains(out.String(), "AutocastKwargs(enabled=false") {
		t.Fatalf("autocast: %v %v, notes %q", a.Autocast(), a.AutocastEnabled(), out.String())
	}
	if a.Backend() != "nccl" || a.Timeout() != DefaultGPUTimeout {
		t.Fatalf("GPU path: backend %s timeout %v", a.Backend(), a.Timeout())
	}

	// No fp16: no scaler (and a note saying the handler is unused).
	fresh(t)
	out.Reset()
	a, err = NewAccelerator(withEnv(envMap(nil)), WithOutput(&out), WithMixedPrecision("bf16"), WithKwargsHandlers(kwargs.GradScalerKwargs{}))
	if err != nil || a.GradScaler() != nil || !a.AutocastEnabled() || !strings.Contains(out.String(), "only used with fp16") {
		t.Fatalf("bf16: %v scaler %v autocast %v notes %q", err, a.GradScaler(), a.AutocastEnabled(), out.String())
	}

	// InitProcessGroupKwargs: the timeout wins over WithTimeout; an explicit
	// gloo backend on the GPU path gets gloo's default.
	fresh(t)
	a, err = NewAccelerator(withEnv(envMap(nil)), WithTimeout(time.Minute), WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Timeout: 5 * time.Second}))
	if err != nil || a.Timeout() != 5*time.Second || a.Backend() != "gloo" {
		t.Fatalf("handler timeout: %v %v %s", err, a.Timeout(), a.Backend())
	}
	fresh(t)
	a, err = NewAccelerator(withEnv(envMap(map[string]string{EnvCUDAVisible: "0"})), WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Backend: "gloo"}))
	if err != nil || a.Timeout() != kwargs.DefaultTimeout || a.Backend() != "gloo" {
		t.Fatalf("gloo on the GPU path: %v %v %s", err, a.Timeout(), a.Backend())
	}
	// nccl without a GPU, in a group: Accelerate's error, before any
	// rendezvous (no store is listening).
	fresh(t)
	_, err = NewAccelerator(withEnv(envMap(map[string]string{EnvWorldSize: "2", EnvRank: "0", EnvRdzvEndpoint: "127.0.0.1:1", EnvLaunchSecret: "s"})),
		WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Backend: "nccl"}))
	if err == nil || err.Error() != "Your assigned backend nccl is not available, please use gloo" {
		t.Fatalf("nccl on CPU: %v", err)
	}
}

// TestInitProcessGroupTimeout: rank 1 never joins; InitProcessGroupKwargs's
// timeout bounds the rendezvous (not the 1800 s default).
func TestInitProcessGroupTimeout(t *testing.T) {
	fresh(t)
	st, err := pg.NewStore("127.0.0.1:0", "sec")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.Serve(ctx)
	start := time.Now()
	_, err = NewAccelerator(withEnv(envMap(map[string]string{
		EnvWorldSize: "2", EnvRank: "0", EnvRdzvEndpoint: st.Addr(), EnvLaunchSecret: "sec",
	})), WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Timeout: time.Second}))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "rank 1 did not join within 1s") {
		t.Fatalf("err = %v", err)
	}
	// Not early; and long before the default (1800 s) would end it (the
	// upper bound is loose: a busy machine may be slow to report).
	if took < 900*time.Millisecond || took > 2*time.Minute {
		t.Fatalf("NewAccelerator failed after %v, want about 1s", took)
	}
	if StateInitialized() {
		t.Fatal("state left behind")
	}

	// init_method "tcp://host:port" names the rendezvous endpoint.
	fresh(t)
	_, err = NewAccelerator(withEnv(envMap(map[string]string{EnvWorldSize: "2", EnvRank: "0", EnvLaunchSecret: "sec", EnvRunID: "second"})),
		WithKwargsHandlers(kwargs.InitProcessGroupKwargs{Timeout: 300 * time.Millisecond, InitMethod: "tcp://" + st.Addr()}))
	if err == nil || !strings.Contains(err.Error(), "at "+st.Addr()) || !strings.Contains(err.Error(), "rank 1 did not join within 300ms") {
		t.Fatalf("init_method: %v", err)
	}
}
