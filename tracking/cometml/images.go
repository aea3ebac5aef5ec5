package cometml

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/goaccel/goaccel/tracking/media"
	"github.com/sirupsen/logrus"
)

// LogImages logs each value as a Comet image, like
// experiment.log_image(image, name=key, step=step) (Accelerate's Comet
// tracker has no log_images; comet_ml's offline archive carries images).
// Offline, the PNG is packed into the archive and messages.json gets the
// "file_upload" message comet_ml writes (upload_type "visualization",
// figName, figCounter, imageId, step, extension "png"), which
// `comet upload` sends. Online, the PNG goes to
// write/experiment/upload-asset (type "image") from the background sender.
// A list logs each element under the same name; a caption
// ([]any{image, "caption"}) is stored as the image's metadata
// {"caption": ...}. Values are an image.Image, PNG []byte or a list of
// those; anything else, nil or an empty list is an error naming the key,
// and nothing is logged. step NoStep leaves the step empty.
func (t *Tracker) LogImages(vals map[string]any, step int, kwargs map[string]any) error {
	for k := range kwargs {
		logrus.Warnf("comet_ml: LogImages kwarg %q is not supported by the Go client and is ignored", k)
	}
	type named struct {
		name string
		img  media.Image
	}
	var all []named
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		items, _, err := media.ParseImages(vals[k])
		if err != nil {
			return fmt.Errorf("comet_ml: LogImages %q: %w", k, err)
		}
		for _, it := range items {
			all = append(all, named{k, it})
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogImages"); err != nil {
		return err
	}
	var sp *int64
	if step >= 0 {
		s := int64(step)
		sp = &s
	}
	ts := nowMillis()
	for _, n := range all {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return fmt.Errorf("comet_ml: generating an image id: %w", err)
		}
		meta := map[string]any{}
		if n.img.Caption != nil {
			meta["caption"] = *n.img.Caption
		}
		ev := event{kind: "image", name: n.name, step: sp, ts: ts, png: n.img.PNG,
			imageID: hex.EncodeToString(id[:]), counter: t.figures, metadata: meta}
		t.figures++
		if err := t.sendLocked(ev); err != nil {
			return err
		}
	}
	return nil
}
