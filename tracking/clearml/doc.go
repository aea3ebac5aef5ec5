// Package clearml is goaccel's ClearML tracker. It writes the offline
// session that clearml's Task.set_offline(True) produces and
// Task.import_offline_session uploads to a ClearML server later; no Python
// or server is needed while training.
//
// # Layout
//
// Start creates <cache>/offline/<task id>/ (task id "offline-" + 32 hex
// digits; cache is the cache_dir init kwarg, else $CLEARML_CACHE_DIR, else
// the logging directory, else ~/.clearml/cache) holding:
//
//   - task.json: the exported task (id, name, project_name, type
//     "training", configuration, hyperparams, execution, output,
//     offline_folder, offline_output_models), rewritten atomically when the
//     configuration is stored;
//   - metrics.jsonl: one line per Log call, each a JSON array of
//     events.add_batch scalar events {timestamp, type
//     "training_stats_scalar", task, iter, metric, variant, value};
//   - log.jsonl: console events {timestamp, type "log", task, level,
//     worker, msg} for logged strings;
//   - data/ (empty: no debug samples or artifacts).
//
// Finish zips the folder into <cache>/offline/<task id>.zip, as ClearML
// does when an offline task closes; import_offline_session takes either.
// Event lines are flushed every half second, so a killed process leaves a
// folder with everything logged more than a second before.
//
// # Values
//
// StoreInitConfiguration sets the "General" configuration object (the
// default section of Task.connect_configuration) of type "dictionary", its
// text being JSON, which ClearML's HOCON parser reads. Log follows
// Accelerate's ClearMLTracker and goes further: a number logged with a step
// is report_scalar with the eval_/test_/train_ prefix as series and the
// rest of the key as title (series "train" without a prefix); without a
// step it is report_single_value (title "Summary", iteration -2^31). A map
// of numbers gives title <key> and one series per inner key (single values
// "<key>/<inner>" without a step). Strings become console log lines
// "<key>: <value>" (Accelerate drops them); other values are skipped with a
// logrus warning naming the key. NaN and infinities are stored as null.
//
// # Images and tables
//
// LogImages writes ClearML debug samples as report_image does offline:
// the PNG goes to data/<key> in the session folder, key being
// <project>/<task name>.<task id>/metrics/<title>/<series>/<title>_<series>_<n:08d>.png
// (n rotating over the max_image_history kwarg, default 5, as ClearML's
// file_history_size), and metrics.jsonl gets a "training_debug_image"
// event (metric, variant, iter, key, url); import_offline_session uploads
// the file and re-targets the event. Title and series follow Log's prefix
// rule; a list logs element i as series "<series>_<i>"; captions are
// dropped with a warning (debug samples have none). LogTable appends a
// "plot" event whose plot_str is the plotly table report_table builds
// from a list of rows (without columns the first row is the header). The
// iteration is the step, 0 without one (ClearML's iteration or 0). Bad
// values and empty tables are errors naming the key, row or column.
//
// # Online
//
// There is no direct REST mode: upload a session with
// clearml's Task.import_offline_session("<cache>/offline/<task id>.zip").
//
// MainProcessOnly is true and RequiresLoggingDirectory false, as for
// Accelerate's ClearMLTracker.
package clearml
