package cometml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/sirupsen/logrus"
)

// restSink sends an experiment to Comet's REST API v2 (the write/experiment
// endpoints comet_ml's RestApiClient uses), authenticating with the API key
// in the Authorization header. Requests go out in order from one goroutine,
// so Log does not wait for the network.
type restSink struct {
	t      *Tracker
	queue  chan restCall
	done   chan struct{}
	errs   []error
	failed int
}

type restCall struct {
	endpoint string
	payload  map[string]any
	file     []byte // when set: a multipart upload with payload as query parameters
	fileName string
}

// upload POSTs a file as multipart form field "file", with params in the
// query string, as comet_ml's RestApiClient.log_experiment_image does.
func (r *restSink) upload(endpoint string, params map[string]any, fileName string, data []byte) error {
	q := url.Values{}
	for k, v := range params {
		switch x := v.(type) {
		case string:
			q.Set(k, x)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return fmt.Errorf("comet_ml: encoding %s parameter %s: %w", endpoint, k, err)
			}
			q.Set(k, string(b))
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", fileName)
	if err == nil {
		_, err = fw.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return fmt.Errorf("comet_ml: %s: building the upload: %w", endpoint, err)
	}
	req, err := http.NewRequest(http.MethodPost, r.t.restBase+endpoint+"?"+q.Encode(), &body)
	if err != nil {
		return fmt.Errorf("comet_ml: %s: %w", endpoint, err)
	}
	req.Header.Set("Authorization", r.t.apiKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := r.t.client.Do(req)
	if err != nil {
		return fmt.Errorf("comet_ml: %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("comet_ml: %s %q: HTTP %d: %s", endpoint, fileName, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return nil
}

// post sends one request and decodes the JSON answer into out (if not nil).
func (r *restSink) post(endpoint string, payload map[string]any, out any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("comet_ml: encoding %s: %w", endpoint, err)
	}
	req, err := http.NewRequest(http.MethodPost, r.t.restBase+endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("comet_ml: %s: %w", endpoint, err)
	}
	req.Header.Set("Authorization", r.t.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.t.client.Do(req)
	if err != nil {
		return fmt.Errorf("comet_ml: %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("comet_ml: %s: HTTP %d: %s", endpoint, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("comet_ml: %s: decoding the answer: %w", endpoint, err)
		}
	}
	return nil
}

func (r *restSink) start(t *Tracker) error {
	r.t = t
	payload := map[string]any{"projectName": t.project}
	if t.workspace != "" {
		payload["workspaceName"] = t.workspace
	}
	if t.experimentName != "" {
		payload["experimentName"] = t.experimentName
	}
	var created struct {
		ExperimentKey string `json:"experimentKey"`
	}
	if err := r.post("write/experiment/create", payload, &created); err != nil {
		return fmt.Errorf("comet_ml: creating the experiment: %w", err)
	}
	if created.ExperimentKey == "" {
		return fmt.Errorf("comet_ml: creating the experiment: the server returned no experimentKey")
	}
	t.key = created.ExperimentKey
	r.queue = make(chan restCall, 4096)
	r.done = make(chan struct{})
	go r.sender()
	if len(t.tags) > 0 {
		r.queue <- restCall{endpoint: "write/experiment/tags", payload: map[string]any{"addedTags": t.tags}}
	}
	return nil
}

// sender is owned by the sink; it ends when finish closes the queue.
func (r *restSink) sender() {
	defer close(r.done)
	for c := range r.queue {
		c.payload["experimentKey"] = r.t.key
		var err error
		if c.file != nil {
			err = r.upload(c.endpoint, c.payload, c.fileName, c.file)
		} else {
			err = r.post(c.endpoint, c.payload, nil)
		}
		if err != nil {
			r.failed++
			if len(r.errs) < 5 {
				r.errs = append(r.errs, err)
			}
			logrus.Warn(err)
		}
	}
}

func (r *restSink) send(ev event) error {
	var c restCall
	switch ev.kind {
	case "metric":
		p := map[string]any{"metricName": ev.name, "metricValue": ev.value, "timestamp": ev.ts}
		if ev.step != nil {
			p["step"] = *ev.step
		}
		c = restCall{endpoint: "write/experiment/metric", payload: p}
	case "param":
		c = restCall{endpoint: "write/experiment/parameter", payload: map[string]any{"parameterName": ev.name, "parameterValue": ev.value, "timestamp": ev.ts}}
	case "other":
		c = restCall{endpoint: "write/experiment/log-other", payload: map[string]any{"key": ev.name, "value": ev.value, "timestamp": ev.ts}}
	case "image":
		p := map[string]any{"type": "image", "extension": ".png", "fileName": ev.name, "overwrite": false}
		if ev.step != nil {
			p["step"] = *ev.step
		}
		if len(ev.metadata) > 0 {
			p["metadata"] = ev.metadata
		}
		c = restCall{endpoint: "write/experiment/upload-asset", payload: p, file: ev.png, fileName: ev.name + ".png"}
	default:
		return fmt.Errorf("comet_ml: unknown event kind %q", ev.kind)
	}
	r.queue <- c
	return nil
}

func (r *restSink) finish(t *Tracker) error {
	close(r.queue)
	<-r.done
	end := map[string]any{"experimentKey": t.key, "startTimeMillis": t.start.UnixMilli(), "endTimeMillis": nowMillis()}
	if err := r.post("write/experiment/set-start-end-time", end, nil); err != nil {
		r.failed++
		r.errs = append(r.errs, err)
	}
	if r.failed > 0 {
		return fmt.Errorf("comet_ml: %d request(s) to %s failed: %w", r.failed, t.restBase, errors.Join(r.errs...))
	}
	return nil
}
