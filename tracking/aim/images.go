package aim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/goaccel/goaccel/tracking/media"
	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

// LogImages tracks each value as aim.Image at step, as Accelerate's
// AimTracker.log_images: the bridge opens the PNG with PIL and calls
// run.track(aim.Image(img, caption=..., **aim_image), name=key, step=step,
// **track). Values are an image.Image, PNG []byte, []any{image, "caption"}
// (Accelerate's (img, caption) tuple), or a list of those, tracked as one
// list of aim.Images per step. kwargs, as Accelerate's: "aim_image" (a map
// passed to aim.Image: caption — the default for uncaptioned images —
// format, quality, optimize) and "track" (a map with "context" and
// "epoch", passed to run.track). Without a step Aim numbers the values
// itself. A nil image, an unsupported value, an empty list or bad kwargs
// are errors naming the key, and nothing is logged; failures inside Aim
// are reported by Finish.
func (t *Tracker) LogImages(vals map[string]any, step int, kwargs map[string]any) error {
	imageKw := map[string]any{}
	defaultCaption := ""
	var ctx, epoch any
	for k, v := range kwargs {
		m, ok := v.(map[string]any)
		if !ok {
			if k == "aim_image" || k == "track" {
				return fmt.Errorf("aim: LogImages kwarg %q must be a map[string]any, got %T", k, v)
			}
			logrus.Warnf("aim: LogImages kwarg %q is not supported (use \"aim_image\" or \"track\") and is ignored", k)
			continue
		}
		switch k {
		case "aim_image":
			for ik, iv := range m {
				switch ik {
				case "caption":
					s, ok := iv.(string)
					if !ok {
						return fmt.Errorf("aim: LogImages kwarg aim_image[\"caption\"] must be a string, got %T", iv)
					}
					defaultCaption = s
				case "format":
					if _, ok := iv.(string); !ok {
						return fmt.Errorf("aim: LogImages kwarg aim_image[\"format\"] must be a string, got %T", iv)
					}
					imageKw[ik] = iv
				case "quality":
					if _, isInt, ok := values.Number(iv); !ok || !isInt {
						return fmt.Errorf("aim: LogImages kwarg aim_image[\"quality\"] must be an integer, got %T", iv)
					}
					imageKw[ik] = iv
				case "optimize":
					if _, ok := iv.(bool); !ok {
						return fmt.Errorf("aim: LogImages kwarg aim_image[\"optimize\"] must be a bool, got %T", iv)
					}
					imageKw[ik] = iv
				default:
					return fmt.Errorf("aim: LogImages kwarg aim_image[%q] is not an aim.Image argument (caption, format, quality, optimize)", ik)
				}
			}
		case "track":
			for tk, tv := range m {
				switch tk {
				case "context":
					c, ok := tv.(map[string]any)
					if !ok {
						return fmt.Errorf("aim: LogImages kwarg track[\"context\"] must be a map[string]any, got %T", tv)
					}
					ctx = c
				case "epoch":
					if _, isInt, ok := values.Number(tv); !ok || !isInt {
						return fmt.Errorf("aim: LogImages kwarg track[\"epoch\"] must be an integer, got %T", tv)
					}
					epoch = tv
				default:
					return fmt.Errorf("aim: LogImages kwarg track[%q] is not supported (context, epoch)", tk)
				}
			}
		default:
			logrus.Warnf("aim: LogImages kwarg %q is not supported (use \"aim_image\" or \"track\") and is ignored", k)
		}
	}
	type request struct {
		name   string
		images []map[string]any
		list   bool
	}
	var reqs []request
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		items, list, err := media.ParseImages(vals[k])
		if err != nil {
			return fmt.Errorf("aim: LogImages %q: %w", k, err)
		}
		r := request{name: k, list: list}
		for _, it := range items {
			caption := defaultCaption
			if it.Caption != nil {
				caption = *it.Caption
			}
			r.images = append(r.images, map[string]any{"png": it.PNG, "caption": caption})
		}
		reqs = append(reqs, r)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("LogImages"); err != nil {
		return err
	}
	var stepV any
	if step >= 0 {
		stepV = step
	}
	for _, r := range reqs {
		msg := map[string]any{
			"op": "image", "name": r.name, "images": r.images, "list": r.list,
			"image_kwargs": imageKw, "step": stepV, "epoch": epoch, "context": ctx,
		}
		if err := t.send(msg, ""); err != nil {
			return fmt.Errorf("aim: LogImages %q: %w", r.name, err)
		}
	}
	return nil
}
