// Package wandb is goaccel's Weights & Biases tracker. It writes a run in
// the offline format of the wandb SDK, so that wandb's own tools read it
// (`wandb leet inspect`, `wandb sync`), without Python or a W&B service.
//
// # Layout
//
// Start creates, under the "dir" init kwarg, else the logging directory,
// else $WANDB_DIR, else the working directory:
//
//	wandb/offline-run-YYYYMMDD_HHMMSS-<id>/run-<id>.wandb
//	wandb/offline-run-YYYYMMDD_HHMMSS-<id>/files/
//	wandb/latest-run -> offline-run-YYYYMMDD_HHMMSS-<id>
//
// # The .wandb transaction log
//
// The file starts with the 7-byte header ":W&B", 0xBEE1 (uint16 little
// endian) and version 0, followed by LevelDB-log framing: 32 KiB blocks (the
// first one holds the header too), each record split into FULL or
// FIRST/MIDDLE.../LAST chunks with a 7-byte chunk header (CRC-32 IEEE of the
// type byte and data, uint16 length, uint8 type) and zero padding where a
// block tail cannot hold a chunk header. Each record is a serialized
// wandb_internal.Record protobuf, encoded here by hand with protowire from
// the field numbers of wandb's wandb_internal.proto. Records carry
// consecutive "num" values and _info.stream_id = run id, as the SDK writes:
//
//   - header (producer "goaccel"), then run (run_id, project, entity,
//     display_name, group, job_type, notes, tags, host, start_time, and a
//     config holding "_wandb": {});
//   - config, for StoreInitConfiguration (key + value_json per entry);
//   - history, one per committed row: the logged values plus _step, _runtime
//     and _timestamp as nested_key/value_json items, and step.num; each
//     followed by a summary record with the same items (latest values win);
//   - exit (exit_code 0, runtime) from Finish.
//
// # Values
//
// Numbers become scalars, strings text, and a map of numbers a group of
// nested keys (W&B shows "outer.inner"); anything else is skipped with a
// logrus warning naming the key. Steps follow run.log: values logged at the
// same step share one row; a row is committed when a later step arrives,
// when Log is called without a step (the row at the current step is
// committed and the step advances), or by the background flusher once it is
// half a second old (a later Log at that step then starts a second row with
// the same _step). A step lower than the current one is rejected with a
// warning, as wandb does. The flusher writes buffered records to the file at
// least every second, so a killed process keeps what it logged more than a
// second before; Finish commits, writes the exit record and fsyncs.
//
// # Images and tables
//
// LogImages and LogTable write media as wandb 0.31 does (checked against a
// run the SDK writes): the file goes under files/media/images/ or
// files/media/table/ as <key>_<step>_<first 20 hex digits of its
// sha256><ext> (the key made upload-safe as wandb does), a files record
// announces it (so `wandb sync` uploads it), and the history row gets the
// value's fields as nested keys: an image.Image, PNG bytes or
// []any{image, "caption"} is an "image-file" (path, sha256, size, format
// "png", width, height, caption); a list is "images/separated" (filenames,
// count, width, height, format, captions when the first has one); a table
// is a "table-file" (path, sha256, size, ncols, nrows, log_mode
// "IMMUTABLE") whose file is {"columns", "data"}, at most 10000 rows as
// wandb keeps. The SDK also logs a table as a "run_table" artifact
// (artifact_path, _latest_artifact_path); this writer does not. Steps
// follow Log. Bad values (nil, unsupported types, rows of the wrong width,
// unsupported cells, empty tables) are errors naming the key, row or
// column, and nothing of the call is logged.
//
// # Modes
//
// WANDB_MODE (or the "mode" init kwarg) selects offline (the default),
// disabled (nothing is written), or online. The real SDK streams online runs
// through its wandb-core service; this package does not reimplement that
// protocol. In online mode the run is written offline exactly as above and
// Finish then runs `wandb sync <run dir>` when the wandb CLI is on PATH
// (using the user's W&B login), or logs the command to run otherwise.
//
// MainProcessOnly is false and RequiresLoggingDirectory false, as for
// Accelerate's WandBTracker.
package wandb
