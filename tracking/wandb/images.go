package wandb

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/tracking/media"
	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// maxTableRows is wandb.Table.MAX_ROWS: a run's table file holds at most
// this many rows (nrows still counts them all).
const maxTableRows = 10000

// mediaFile is one file written under the run's files/ directory.
type mediaFile struct {
	rel    string // path relative to files/, with forward slashes
	sha256 string
	size   int
}

// uploadSafe is wandb's make_file_path_upload_safe: leading slashes are
// dropped and "." or ".." path components become "_" or "__".
func uploadSafe(key string) string {
	parts := strings.Split(strings.TrimLeft(key, "/"), "/")
	for i, p := range parts {
		if p == "." || p == ".." {
			parts[i] = strings.ReplaceAll(p, ".", "_")
		}
	}
	return strings.Join(parts, "/")
}

// writeMediaLocked stores data as files/media/<subdir>/<key>_<step>_<sha256
// prefix><ext>, wandb's name for a media file, and returns its description.
func (t *Tracker) writeMediaLocked(subdir, key string, step int64, ext string, data []byte) (mediaFile, error) {
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	rel := path.Join("media", subdir, fmt.Sprintf("%s_%d_%s%s", uploadSafe(key), step, digest[:20], ext))
	full := filepath.Join(t.runDir, "files", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return mediaFile{}, fmt.Errorf("wandb: creating the media directory: %w", err)
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		return mediaFile{}, fmt.Errorf("wandb: writing %s: %w", rel, err)
	}
	return mediaFile{rel: rel, sha256: digest, size: len(data)}, nil
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("wandb: encoding %T: %v", v, err)) // only called with encodable values
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// mediaItems turns the fields of a media value (wandb's to_json of an
// Image, an image list or a Table) into history items under key.
func mediaItems(key string, fields map[string]any) []item {
	var items []item
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		items = append(items, item{path: []string{key, f}, valueJSON: jsonText(fields[f])})
	}
	return items
}

// LogImages logs each value as a W&B image at step, like
// run.log({key: wandb.Image(...)}): the PNG goes to
// files/media/images/<key>_<step>_<sha256[:20]>.png and the history row
// gets the key as an "image-file" value (path, sha256, size, format,
// width, height, caption). A list becomes an "images/separated" value
// (filenames, count, captions), as wandb logs a list of images. Values are
// an image.Image, PNG []byte, []any{image, "caption"}, or a list of those;
// anything else, a nil image or an empty list is an error naming the key,
// and nothing is logged. Step and kwargs ("commit") follow Log.
func (t *Tracker) LogImages(vals map[string]any, step int, kwargs map[string]any) error {
	type entry struct {
		items []media.Image
		list  bool
	}
	parsed := map[string]entry{}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if uploadSafe(k) == "" {
			return fmt.Errorf("wandb: LogImages: empty key")
		}
		items, list, err := media.ParseImages(vals[k])
		if err != nil {
			return fmt.Errorf("wandb: LogImages %q: %w", k, err)
		}
		parsed[k] = entry{items, list}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogImages"); err != nil {
		return err
	}
	if t.mode == ModeDisabled || len(vals) == 0 {
		return nil
	}
	s, commit, ok, err := t.rowLocked(step, kwargs, slices.Sorted(maps.Keys(vals)))
	if err != nil || !ok {
		return err
	}
	var rows []item
	var written []string
	for _, k := range slices.Sorted(maps.Keys(parsed)) {
		e := parsed[k]
		var files []mediaFile
		for _, img := range e.items {
			f, err := t.writeMediaLocked("images", k, s, ".png", img.PNG)
			if err != nil {
				return err
			}
			files = append(files, f)
			written = append(written, f.rel)
		}
		first := e.items[0]
		var fields map[string]any
		if !e.list {
			fields = map[string]any{
				"_type": "image-file", "format": "png", "width": first.Width, "height": first.Height,
				"sha256": files[0].sha256, "size": files[0].size, "path": files[0].rel,
			}
			if first.Caption != nil {
				fields["caption"] = *first.Caption
			}
		} else {
			names := make([]string, len(files))
			for i, f := range files {
				names[i] = f.rel
			}
			fields = map[string]any{
				"_type": "images/separated", "format": "png", "width": first.Width, "height": first.Height,
				"count": len(files), "filenames": names,
			}
			if first.Caption != nil { // wandb lists captions when the first image has one
				caps := make([]any, len(e.items))
				for i, img := range e.items {
					if img.Caption != nil {
						caps[i] = *img.Caption
					}
				}
				fields["captions"] = caps
			}
			for i, img := range e.items {
				if img.Width != first.Width || img.Height != first.Height {
					logrus.Warnf("wandb: images of %q differ in size (%dx%d at 0, %dx%d at %d); the W&B UI shows them at the first one's size", k, first.Width, first.Height, img.Width, img.Height, i)
					break
				}
			}
		}
		rows = append(rows, mediaItems(k, fields)...)
	}
	if err := t.writeLocked(filesRecord(t.nextNum(), t.runID, written)); err != nil {
		return fmt.Errorf("wandb: writing the files record: %w", err)
	}
	for _, it := range rows {
		t.pending.put(it)
	}
	if commit {
		return t.commitLocked()
	}
	return nil
}

// LogTable logs a W&B table at step, like run.log({name: wandb.Table(columns,
// data)}): files/media/table/<name>_<step>_<sha256[:20]>.table.json holds
// {"columns", "data"} (at most 10000 rows, wandb's limit, with a warning
// beyond) and the history row gets name as a "table-file" value (path,
// sha256, size, ncols, nrows, log_mode "IMMUTABLE"). Without columns the
// first row is the header. Rows of the wrong width, cells other than nil,
// bool, number or string, and an empty table are errors naming the row or
// column. Step and kwargs ("commit") follow Log.
func (t *Tracker) LogTable(name string, columns []string, data [][]any, step int, kwargs map[string]any) error {
	if uploadSafe(name) == "" {
		return fmt.Errorf("wandb: LogTable: empty table name")
	}
	columns, data, err := media.NormalizeTable(columns, data)
	if err != nil {
		return fmt.Errorf("wandb: LogTable %q: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogTable"); err != nil {
		return err
	}
	if t.mode == ModeDisabled {
		return nil
	}
	s, commit, ok, err := t.rowLocked(step, kwargs, []string{name})
	if err != nil || !ok {
		return err
	}
	kept := data
	if len(kept) > maxTableRows {
		logrus.Warnf("wandb: table %q has %d rows; its file keeps the first %d (wandb's limit)", name, len(data), maxTableRows)
		kept = kept[:maxTableRows]
	}
	f, err := t.writeMediaLocked("table", name, s, ".table.json", tableJSON(columns, kept))
	if err != nil {
		return err
	}
	if err := t.writeLocked(filesRecord(t.nextNum(), t.runID, []string{f.rel})); err != nil {
		return fmt.Errorf("wandb: writing the files record: %w", err)
	}
	for _, it := range mediaItems(name, map[string]any{
		"_type": "table-file", "path": f.rel, "sha256": f.sha256, "size": f.size,
		"ncols": len(columns), "nrows": len(data), "log_mode": "IMMUTABLE",
	}) {
		t.pending.put(it)
	}
	if commit {
		return t.commitLocked()
	}
	return nil
}

// tableJSON is the table file wandb writes for a run: compact JSON
// {"columns": [...], "data": [[...], ...]}, numbers as Python prints them
// (NaN and infinities as the literals wandb's readers accept).
func tableJSON(columns []string, data [][]any) []byte {
	var b bytes.Buffer
	b.WriteString(`{"columns":`)
	b.WriteString(jsonText(columns))
	b.WriteString(`,"data":[`)
	for i, row := range data {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for j, c := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			if js, ok := values.NumberJSON(c, values.PythonLiterals); ok {
				b.WriteString(js)
			} else {
				b.WriteString(jsonText(c))
			}
		}
		b.WriteByte(']')
	}
	b.WriteString("]}")
	return b.Bytes()
}
