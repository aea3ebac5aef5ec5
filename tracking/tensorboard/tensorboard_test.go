package tensorboard

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
	"github.com/goaccel/goaccel/tracking/values"
)

func loadVectors(t *testing.T) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, hx, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("vector %s: %v", name, err)
		}
		out[name] = b
	}
	return out
}

// TestFramingMatchesTensorBoardVectors compares our framing and encoding
// byte for byte with records produced by TensorBoard's protos and
// tensorboardX's framing (testdata/gen_vectors.py).
func TestFramingMatchesTensorBoardVectors(t *testing.T) {
	v := loadVectors(t)
	le := func(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
	if got := le(MaskedCRC32C([]byte("123456789"))); !bytes.Equal(got, v["crc_123456789"]) {
		t.Errorf("masked crc32c(123456789) = %x, want %x", got, v["crc_123456789"])
	}
	if got := le(MaskedCRC32C(nil)); !bytes.Equal(got, v["crc_empty"]) {
		t.Errorf("masked crc32c(empty) = %x, want %x", got, v["crc_empty"])
	}
	if got := AppendRecord(nil, fileVersionEvent(1.5)); !bytes.Equal(got, v["file_version"]) {
		t.Errorf("file_version record\n got %x\nwant %x", got, v["file_version"])
	}
	f := &eventFile{}
	if err := f.appendScalars(1.5, 7, []string{"loss"}, []float64{0.25}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.buf, v["scalar"]) {
		t.Errorf("scalar record\n got %x\nwant %x", f.buf, v["scalar"])
	}
	f = &eventFile{}
	if err := f.appendScalars(2.25, 300, []string{"a", "train/acc"}, []float64{-1, 0.5}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.buf, v["two_scalars"]) {
		t.Errorf("two-scalar record\n got %x\nwant %x", f.buf, v["two_scalars"])
	}
}

// readRecords parses a TFRecord file, checking both CRCs of every record.
func readRecords(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	r := bufio.NewReader(bytes.NewReader(data))
	for {
		var hdr [12]byte
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: truncated header after %d records: %v", path, len(out), err)
		}
		if MaskedCRC32C(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) {
			t.Fatalf("%s: record %d: bad length CRC", path, len(out))
		}
		n := binary.LittleEndian.Uint64(hdr[:8])
		payload := make([]byte, n+4)
		if _, err := io.ReadFull(r, payload); err != nil {
			t.Fatalf("%s: truncated record %d: %v", path, len(out), err)
		}
		if MaskedCRC32C(payload[:n]) != binary.LittleEndian.Uint32(payload[n:]) {
			t.Fatalf("%s: record %d: bad data CRC", path, len(out))
		}
		out = append(out, payload[:n])
	}
}

// eventFields decodes the top-level fields of an Event.
func eventFields(t *testing.T, b []byte) (wall float64, step int64, version string, summary []byte) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal("bad tag")
		}
		b = b[n:]
		switch {
		case num == evWallTime && typ == protowire.Fixed64Type:
			x, n := protowire.ConsumeFixed64(b)
			wall, b = math.Float64frombits(x), b[n:]
		case num == evStep && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			step, b = int64(x), b[n:]
		case num == evFileVersion:
			x, n := protowire.ConsumeBytes(b)
			version, b = string(x), b[n:]
		case num == evSummary:
			x, n := protowire.ConsumeBytes(b)
			summary, b = x, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			b = b[n:]
		}
	}
	return
}

func eventFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("want one event file in %s, got %v (%v)", dir, m, err)
	}
	return m
}

func TestFileNameAndFirstEvent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddScalar("x", 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := eventFiles(t, dir)[0]
	host, _ := os.Hostname()
	base := filepath.Base(path)
	var ts int64
	var rest string
	if _, err := fmt.Sscanf(base, "events.out.tfevents.%010d.%s", &ts, &rest); err != nil {
		t.Fatalf("file name %q: %v", base, err)
	}
	if len(strings.Split(base, ".")[3]) != 10 || !strings.HasPrefix(rest, host+"."+fmt.Sprint(os.Getpid())+".") {
		t.Errorf("file name %q does not follow events.out.tfevents.%%010d.<host>.<pid>.<n>", base)
	}
	recs := readRecords(t, path)
	if len(recs) != 2 {
		t.Fatalf("want 2 records, got %d", len(recs))
	}
	wall, _, version, _ := eventFields(t, recs[0])
	if version != "brain.Event:2" || math.Abs(wall-float64(time.Now().Unix())) > 60 {
		t.Errorf("first event: version %q wall %v", version, wall)
	}
	_, step, _, summary := eventFields(t, recs[1])
	if step != 3 || len(summary) == 0 {
		t.Errorf("second event: step %d summary %x", step, summary)
	}
	if err := w.AddScalar("x", 1, 4); err == nil {
		t.Error("AddScalar after Close succeeded")
	}
}

// TestBackgroundFlush checks that values reach the file without any Flush
// call (within a second on an idle machine).
func TestBackgroundFlush(t *testing.T) {
	dir := t.TempDir()
	tr, err := New("run", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	if err := tr.Log(map[string]any{"loss": 0.5}, 1, nil); err != nil {
		t.Fatal(err)
	}
	path := eventFiles(t, filepath.Join(dir, "run"))[0]
	eventually(t, "the scalar's record without Flush", func() bool { return completeRecords(path) >= 2 })
	if recs := readRecords(t, path); len(recs) != 2 {
		t.Fatalf("without Flush the file holds %d records, want 2", len(recs))
	}
}

func TestUnsupportedValueWarnsNamingKey(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	tr, err := New("run", t.TempDir(), map[string]any{"logger": log})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Finish()
	for i := 0; i < 3; i++ {
		if err := tr.Log(map[string]any{"weights": []float64{1, 2}, "ok": 1}, i, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(hook.AllEntries()) != 1 {
		t.Fatalf("want exactly one warning, got %d", len(hook.AllEntries()))
	}
	e := hook.LastEntry()
	if e.Level != logrus.WarnLevel || !strings.Contains(e.Message, `"weights"`) || !strings.Contains(e.Message, "[]float64") {
		t.Errorf("warning %q (level %v) does not name the key and type", e.Message, e.Level)
	}
}

func TestRequiresLoggingDir(t *testing.T) {
	_, err := New("run", "", nil)
	if err == nil || err.Error() != "Logging with `tensorboard` requires a `logging_dir` to be passed in." {
		t.Fatalf("err = %v", err)
	}
}

type tbReadback struct {
	EA map[string]struct {
		FileVersion float64                 `json:"file_version"`
		Scalars     map[string][][2]float64 `json:"scalars"`
		Texts       map[string][][2]any     `json:"texts"`
		Images      map[string][][4]float64 `json:"images"`
		HParams     struct {
			Experiment struct {
				HParams []string       `json:"hparams"`
				Types   map[string]int `json:"types"`
			} `json:"experiment"`
			Start     map[string]any `json:"start"`
			EndStatus int            `json:"end_status"`
			Tags      []string       `json:"tags"`
		} `json:"hparams"`
	} `json:"ea"`
	TBParse struct {
		Scalars [][4]any       `json:"scalars"`
		Text    [][4]any       `json:"text"`
		HParams map[string]any `json:"hparams"`
	} `json:"tbparse"`
}

// TestReadBackWithTensorBoard writes a run with our code and reads it with
// TensorBoard's EventAccumulator and with tbparse.
func TestReadBackWithTensorBoard(t *testing.T) {
	py := pyvenv.Python(t)
	_ = py
	root := t.TempDir()
	tr, err := New("proj", root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"lr": 0.001, "epochs": 3, "optimizer": "adam", "amp": true, "model": map[string]any{"depth": 4}}
	if err := tr.StoreInitConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := 0; i < n; i++ {
		vals := map[string]any{"loss": 1 / float64(i+1), "train/acc": float32(i) / n, "count": i}
		if i%100 == 0 {
			vals["note"] = fmt.Sprintf("step %d", i)
			vals["lr_group"] = map[string]float64{"a": float64(i), "b": -float64(i)}
		}
		if err := tr.Log(vals, i*2, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Re-running a cell sends steps backwards: file_version 2 keeps them.
	if err := tr.Log(map[string]any{"loss": 42.0}, 0, nil); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 8, 6))
	for x := 0; x < 8; x++ {
		img.Set(x, 2, color.RGBA{255, 0, 0, 255})
	}
	if err := tr.LogImages(map[string]any{"sample": img}, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.LogTable("preds", []string{"id", "label"}, [][]any{{1, "cat"}, {2, "dog"}}, 6, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "proj", "hparams.yml")); err != nil {
		t.Errorf("hparams.yml: %v", err)
	}

	out := pyvenv.Run(t, ".", "testdata/readback.py", root)
	var rb tbReadback
	if err := json.Unmarshal(out, &rb); err != nil {
		t.Fatalf("decoding readback: %v\n%s", err, out)
	}
	main, ok := rb.EA["proj"]
	if !ok {
		t.Fatalf("EventAccumulator found no run proj: runs %v", keys(rb.EA))
	}
	if main.FileVersion != 2 {
		t.Errorf("file_version = %v", main.FileVersion)
	}
	loss := main.Scalars["loss"]
	if len(loss) != n+1 {
		t.Fatalf("EventAccumulator: loss has %d points, want %d", len(loss), n+1)
	}
	for i := 0; i < n; i++ {
		if loss[i][0] != float64(i*2) || float32(loss[i][1]) != float32(1/float64(i+1)) {
			t.Fatalf("loss[%d] = %v, want step %d value %v", i, loss[i], i*2, float32(1/float64(i+1)))
		}
		if c := main.Scalars["count"][i]; c[1] != float64(i) {
			t.Fatalf("count[%d] = %v", i, c)
		}
		if a := main.Scalars["train/acc"][i]; float32(a[1]) != float32(i)/n {
			t.Fatalf("train/acc[%d] = %v", i, a)
		}
	}
	if last := loss[n]; last[0] != 0 || last[1] != 42 {
		t.Errorf("backwards step dropped or wrong: %v", last)
	}
	notes := main.Texts["note"]
	if len(notes) != n/100 || notes[1][0] != float64(200) || notes[1][1] != "step 100" {
		t.Errorf("texts = %v", notes)
	}
	if im := main.Images["sample"]; len(im) != 1 || im[0] != [4]float64{5, 8, 6, im[0][3]} || im[0][3] == 0 {
		t.Errorf("images = %v", im)
	}
	if tb := main.Texts["preds"]; len(tb) != 1 || !strings.Contains(tb[0][1].(string), "| 2 | dog |") {
		t.Errorf("table = %v", tb)
	}
	for _, sub := range []string{"a", "b"} {
		g, ok := rb.EA["proj/lr_group_"+sub]
		if !ok {
			t.Fatalf("no add_scalars run lr_group_%s: runs %v", sub, keys(rb.EA))
		}
		pts := g.Scalars["lr_group"]
		if len(pts) != n/100 || pts[2][0] != 400 || math.Abs(pts[2][1]) != 200 {
			t.Errorf("lr_group_%s = %v", sub, pts)
		}
	}
	hp := main.HParams
	if len(hp.Tags) != 3 || hp.EndStatus != statusSuccess {
		t.Errorf("hparams tags %v end status %v", hp.Tags, hp.EndStatus)
	}
	wantHP := map[string]any{"lr": 0.001, "epochs": 3.0, "optimizer": "adam", "amp": true, "model/depth": 4.0}
	for k, v := range wantHP {
		if hp.Start[k] != v {
			t.Errorf("hparam %s = %v, want %v", k, hp.Start[k], v)
		}
	}
	if len(hp.Experiment.HParams) != len(wantHP) || hp.Experiment.Types["optimizer"] != dataTypeString || hp.Experiment.Types["lr"] != dataTypeFloat64 {
		t.Errorf("experiment = %+v", hp.Experiment)
	}

	// tbparse
	count := map[string]int{}
	for _, row := range rb.TBParse.Scalars {
		dir, tag := row[0].(string), row[1].(string)
		count[dir+":"+tag]++
		if dir == "proj" && tag == "count" && row[3].(float64) != row[2].(float64)/2 {
			t.Fatalf("tbparse count row %v", row)
		}
	}
	if count["proj:loss"] != n+1 || count["proj:count"] != n || count["proj/lr_group_a:lr_group"] != n/100 {
		t.Errorf("tbparse scalar counts %v", count)
	}
	texts := 0
	for _, row := range rb.TBParse.Text {
		if row[1] == "note" {
			texts++
		}
	}
	if texts != n/100 {
		t.Errorf("tbparse text rows %v", rb.TBParse.Text)
	}
	if rb.TBParse.HParams["optimizer"] != "adam" || rb.TBParse.HParams["lr"] != 0.001 {
		t.Errorf("tbparse hparams %v", rb.TBParse.HParams)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

var _ = values.NoStep

// eventually polls cond until it holds: the background flush writes when
// the scheduler lets it (within a second on an idle machine), and only a
// flush that never comes fails the test (after a 5 min hang guard).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 min", what)
		}
	}
}

// completeRecords counts the whole records at the start of the file at path
// (a record being written is not counted).
func completeRecords(path string) int {
	data, _ := os.ReadFile(path)
	n := 0
	for len(data) >= 12 {
		size := binary.LittleEndian.Uint64(data[:8])
		if uint64(len(data)-12) < size+4 {
			break
		}
		data = data[12+size+4:]
		n++
	}
	return n
}
