package clearml

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/tracking/media"
	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// defaultImageHistory is ClearML's metrics.file_history_size: debug-sample
// file names rotate over this many per title/series.
const defaultImageHistory = 5

// LogImages reports each value as a ClearML debug sample (report_image):
// title and series follow Log's eval_/test_/train_ rule, the iteration is
// step (0 for NoStep, as ClearML's iteration or 0). The PNG is stored in
// the session's data/ folder under the key ClearML gives it,
// <project>/<task name>.<task id>/metrics/<title>/<series>/<title>_<series>_<n:08d>.png,
// and a "training_debug_image" event (metric, variant, iter, key, url) is
// appended to metrics.jsonl; import_offline_session uploads the file and
// points the event at it. n counts per title/series modulo the kwarg
// max_image_history (default 5; negative: no rotation), as ClearML reuses
// file names. A list logs element i under series "<series>_<i>". ClearML
// debug samples have no caption: a caption is dropped with a warning.
// Values are an image.Image, PNG []byte or a list of those; anything else,
// nil or an empty list is an error naming the key, and nothing is logged.
func (t *Tracker) LogImages(vals map[string]any, step int, kwargs map[string]any) error {
	history := defaultImageHistory
	for k, v := range kwargs {
		if k == "max_image_history" {
			n, isInt, ok := values.Number(v)
			if !ok || !isInt {
				return fmt.Errorf("clearml: LogImages kwarg \"max_image_history\" must be an integer, got %T", v)
			}
			history = int(n)
			continue
		}
		logrus.Warnf("clearml: LogImages kwarg %q is not supported by the Go writer and is ignored", k)
	}
	type sample struct {
		title, series string
		png           []byte
	}
	var samples []sample
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		items, list, err := media.ParseImages(vals[k])
		if err != nil {
			return fmt.Errorf("clearml: LogImages %q: %w", k, err)
		}
		title, series := titleSeries(k)
		for i, it := range items {
			if it.Caption != nil {
				logrus.Warnf("clearml: LogImages %q: ClearML debug samples have no captions; caption %q not stored", k, *it.Caption)
			}
			s := series
			if list {
				s = fmt.Sprintf("%s_%d", series, i)
			}
			samples = append(samples, sample{title, s, it.PNG})
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogImages"); err != nil {
		return err
	}
	iter := int64(max(step, 0))
	ts := time.Now().UnixMilli()
	var events []map[string]any
	for _, s := range samples {
		key := t.debugSampleKeyLocked(s.title, s.series, history)
		local := filepath.Join(t.folder, "data", filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return fmt.Errorf("clearml: creating the debug sample folder: %w", err)
		}
		if err := os.WriteFile(local, s.png, 0o644); err != nil {
			return fmt.Errorf("clearml: writing debug sample %s: %w", key, err)
		}
		events = append(events, map[string]any{
			"timestamp": ts, "type": "training_debug_image", "task": t.taskID,
			"iter": iter, "metric": s.title, "variant": s.series, "key": key, "url": local,
		})
	}
	return t.appendLine(t.metricsW, events)
}

// debugSampleKeyLocked is the storage key ClearML's UploadEvent gives the
// next image of title/series: the task's output prefix
// (<project>/<task name>.<task id>, quoted as ClearML does), "metrics",
// then title, series and <title>_<series>_<count:08d>.png with slashes
// and URL-reserved characters replaced.
func (t *Tracker) debugSampleKeyLocked(title, series string, history int) string {
	if t.imageCounts == nil {
		t.imageCounts = map[string]int{}
	}
	counter := title + "_" + series
	n := t.imageCounts[counter]
	t.imageCounts[counter] = n + 1
	if history >= 1 {
		n %= history
	}
	file := replaceSlash(fmt.Sprintf("%s_%s_%08d", title, series, n)) + ".png"
	parts := []string{
		quotePath(limitName(t.project, 256)),
		quotePath(truncateRunes(t.taskName, max(2, 128-len(t.taskID)-1)) + "." + t.taskID),
		"metrics", replaceSlash(title), replaceSlash(series), file,
	}
	key := strings.Join(parts, "/")
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = limitFolderLength(s)
	}
	return strings.Join(segs, "/")
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// limitName keeps project names under ClearML's 256-character limit.
func limitName(s string, n int) string {
	if len([]rune(s)) < n {
		return s
	}
	return truncateRunes(s, n-1)
}

// quotePath is Python's urllib.parse.quote(s, safe="'[]{}()$^,.; -_+-=/").
func quotePath(s string) string {
	const safe = "'[]{}()$^,.; -_+=/~"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(safe, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// replaceSlash is ClearML's UploadEvent._replace_slash.
func replaceSlash(part string) string {
	part = strings.ReplaceAll(strings.Trim(strings.ReplaceAll(part, `\`, "/"), "/"), "/", ".slash.")
	var b strings.Builder
	for _, r := range part {
		if strings.ContainsRune("#\"';?:@&=+$,%!\r\n", r) {
			fmt.Fprintf(&b, "0x%02x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// limitFolderLength is ClearML's limit_path_folder_length: key parts
// longer than 250 characters are replaced by an MD5-based name.
func limitFolderLength(p string) string {
	if len([]rune(p)) <= 250 {
		return p
	}
	md5hex := func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	if dot := strings.LastIndex(p, "."); dot >= 0 {
		if n := md5hex(p[:dot]) + p[dot:]; len([]rune(n)) <= 250 {
			return n
		}
	}
	return md5hex(p)
}

// LogTable reports a table as ClearML's report_table does with a list of
// rows: a "plot" event whose plot_str is the plotly table
// create_plotly_table builds (header values = columns, cells = one list
// per column), with title and series from name by Log's
// eval_/test_/train_ rule, at iteration step (0 for NoStep). Without
// columns the first row is the header (as Accelerate). An empty table (the
// case where Accelerate raises ValueError), rows of the wrong width and
// cells other than nil, bool, number or string are errors naming the row
// or column. NaN and infinities are stored as null.
func (t *Tracker) LogTable(name string, columns []string, data [][]any, step int, kwargs map[string]any) error {
	columns, data, err := media.NormalizeTable(columns, data)
	if err != nil {
		return fmt.Errorf("clearml: LogTable %q: %w", name, err)
	}
	for k := range kwargs {
		logrus.Warnf("clearml: LogTable kwarg %q is not supported by the Go writer and is ignored", k)
	}
	title, series := titleSeries(name)
	cells := make([][]any, len(columns))
	for j := range columns {
		cells[j] = make([]any, len(data))
		for i, row := range data {
			v := row[j]
			if f, _, ok := values.Number(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				v = nil
			}
			cells[j][i] = v
		}
	}
	font := func(size int, color string) map[string]any {
		return map[string]any{"family": "Heebo, verdana, arial, sans-serif", "size": size, "color": color}
	}
	plot := map[string]any{
		"data": []any{map[string]any{
			"type": "table",
			"header": map[string]any{
				"values": columns, "align": "left",
				"line": map[string]any{"width": 0.5, "color": "#d4d6e0"},
				"fill": map[string]any{"color": "#fff"}, "font": font(12, "#333"),
			},
			"cells": map[string]any{
				"height": 30, "values": cells, "align": "left",
				"line": map[string]any{"color": "white", "width": 1}, "font": font(14, "#384161"),
			},
		}},
		"layout": map[string]any{"title.text": title, "title": series},
	}
	plotStr, err := json.Marshal(plot)
	if err != nil {
		return fmt.Errorf("clearml: LogTable %q: encoding the table: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogTable"); err != nil {
		return err
	}
	return t.appendLine(t.metricsW, []map[string]any{{
		"timestamp": time.Now().UnixMilli(), "type": "plot", "task": t.taskID,
		"iter": int64(max(step, 0)), "metric": title, "variant": series, "plot_str": string(plotStr),
	}})
}
