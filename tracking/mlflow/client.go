package mlflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// APIError is an error answer from the tracking server.
type APIError struct {
	Status  int    // HTTP status
	Code    string // error_code, e.g. RESOURCE_DOES_NOT_EXIST
	Message string
	Path    string // the endpoint, e.g. runs/log-batch
}

func (e *APIError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("mlflow: %s: HTTP %d %s: %s", e.Path, e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("mlflow: %s: HTTP %d: %s", e.Path, e.Status, e.Message)
}

// retryable reports whether the request may succeed if sent again: the
// server was unreachable, overloaded (429) or failed (5xx).
func retryable(err error) bool {
	var api *APIError
	if errors.As(err, &api) {
		return api.Status == http.StatusTooManyRequests || api.Status >= 500
	}
	return err != nil && !errors.Is(err, context.Canceled)
}

// client speaks MLflow's REST API (/api/2.0/mlflow/).
type client struct {
	base  string // tracking URI without a trailing slash
	http  *http.Client
	token string // MLFLOW_TRACKING_TOKEN
	user  string // MLFLOW_TRACKING_USERNAME
	pass  string // MLFLOW_TRACKING_PASSWORD
}

// call sends one request: GET with query parameters, or POST with a JSON
// body, and decodes the JSON answer into out (when non-nil).
func (c *client) call(ctx context.Context, method, path string, in any, out any) error {
	u := c.base + "/api/2.0/mlflow/" + path
	var body io.Reader
	if method == http.MethodGet {
		if q, ok := in.(url.Values); ok && len(q) > 0 {
			u += "?" + q.Encode()
		}
	} else if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("mlflow: encoding the %s request: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("mlflow: building the %s request: %w", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "goaccel-mlflow")
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("mlflow: %s: the tracking server at %s is unreachable: %w", path, c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("mlflow: %s: reading the answer from %s: %w", path, c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode, Path: path}
		var eb struct {
			Code    string `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &eb) == nil && (eb.Code != "" || eb.Message != "") {
			e.Code, e.Message = eb.Code, eb.Message
		} else {
			e.Message = strings.TrimSpace(string(data))
			if len(e.Message) > 300 {
				e.Message = e.Message[:300] + "…"
			}
		}
		return e
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("mlflow: %s: decoding the answer from %s: %w", path, c.base, err)
		}
	}
	return nil
}

// Backoff is the retry schedule: the first wait, doubled after each failure
// up to Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) next(d time.Duration) time.Duration {
	if d <= 0 {
		return b.Initial
	}
	return min(2*d, b.Max)
}

// withRetry runs f until it succeeds, fails with a non-retryable error,
// attempts run out, or ctx ends; it returns the last error and the number of
// attempts.
func withRetry(ctx context.Context, attempts int, b Backoff, f func(context.Context) error) (int, error) {
	var err error
	wait := time.Duration(0)
	for i := 1; ; i++ {
		err = f(ctx)
		if err == nil || !retryable(err) || i >= attempts {
			return i, err
		}
		wait = b.next(wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return i, fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// jsonFloat encodes a float64 the way MLflow's protobuf JSON parser accepts
// it, NaN and infinities included.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsNaN(x):
		return []byte(`"NaN"`), nil
	case math.IsInf(x, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

type metric struct {
	Key       string    `json:"key"`
	Value     jsonFloat `json:"value"`
	Timestamp int64     `json:"timestamp"`
	Step      int64     `json:"step"`
}

type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type logBatch struct {
	RunID   string     `json:"run_id"`
	Metrics []metric   `json:"metrics,omitempty"`
	Params  []keyValue `json:"params,omitempty"`
	Tags    []keyValue `json:"tags,omitempty"`
}
