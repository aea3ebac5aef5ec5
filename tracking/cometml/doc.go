// Package cometml is goaccel's Comet tracker ("comet_ml"). Without an API
// key it writes an offline experiment archive that comet_ml's own offline
// tooling reads and uploads (`comet upload <key>.zip`); with COMET_API_KEY
// set it talks to Comet's REST API v2 directly. No Python is involved.
//
// # Offline archive
//
// The archive is <offline_dir>/<experiment_key>.zip, where offline_dir is
// the offline_directory init kwarg, else $COMET_OFFLINE_DIRECTORY, else the
// logging directory, else ".cometml-runs"; the key is 32 hex digits. It
// holds the two files comet_ml's OfflineSender reads:
//
//   - experiment.json: offline_id, project_name, workspace, start_time and
//     stop_time (milliseconds), tags, resume_strategy "create" and the
//     other fields comet_ml's writer adds;
//   - messages.json: one {"type": ..., "payload": {...}} JSON object per
//     line, with consecutive message_id values: "metric_msg" (metric
//     {metricName, metricValue, step, epoch} plus local_timestamp),
//     "parameter_msg" (param {paramName, paramValue, source "manual",
//     step null}) and "log_other" ({key, value}), in the shapes comet_ml's
//     offline JSON schemas validate.
//
// While the run is open the messages are appended to
// <offline_dir>/<key>.staging/ and the zip is rewritten (to a temporary
// file, then renamed) every second when something changed, and at Finish,
// which then removes the staging directory. A process killed mid-run thus
// leaves a valid archive with everything logged more than a second before.
// Very large runs rewrite the zip less often (rewriting takes at most a
// tenth of the time); the staging directory always has everything and is
// itself an experiment.json + messages.json pair that can be zipped.
//
// # Values
//
// StoreInitConfiguration logs parameters (nested maps flattened with "|" and
// marked with the hasNestedParams "other" value, as comet_ml does). Log
// turns numbers into metrics at step (no step when NoStep), strings into
// "other" values, and a map of numbers into metrics named "<key>/<inner>"
// (Accelerate drops the outer key); anything else is skipped with a logrus
// warning naming the key. NaN and infinities are sent as the strings "NaN",
// "Infinity", "-Infinity".
//
// # Images
//
// LogImages logs images as experiment.log_image does (Accelerate's Comet
// tracker has none): offline, each PNG is packed into the archive and
// messages.json gets comet_ml's "file_upload" message (upload_type
// "visualization", figName = key, figCounter, imageId, step, extension
// "png"), which comet_ml's OfflineSender uploads; online, it is POSTed to
// write/experiment/upload-asset (type "image") as a multipart upload. A
// caption is stored as metadata {"caption": ...}; a list logs each image
// under the key. There is no LogTable. Bad values are errors naming the
// key.
//
// # Online mode
//
// With an API key (COMET_API_KEY or the api_key init kwarg; online=false
// forces offline) Start POSTs write/experiment/create to
// <root>/api/rest/v2/ (root from COMET_URL_OVERRIDE, default
// https://www.comet.com) with the key in the Authorization header, and uses
// the experimentKey it returns. Metrics, parameters, other values and tags
// then go to write/experiment/metric, …/parameter, …/log-other and …/tags
// from one background goroutine, in order, so Log does not wait for the
// network; Finish drains the queue, sends …/set-start-end-time and returns
// an error summarising any failed requests (each is also logged). Nothing
// is written to disk online.
//
// MainProcessOnly is true and RequiresLoggingDirectory false, as for
// Accelerate's CometMLTracker.
package cometml
