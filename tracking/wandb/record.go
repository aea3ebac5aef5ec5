package wandb

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of wandb_internal.proto (wandb 0.31, MIT licensed), encoded
// by hand with protowire so that no generated code is needed.
const (
	recNum     = 1
	recHistory = 2
	recSummary = 3
	recConfig  = 5
	recFiles   = 6
	recRun     = 17
	recExit    = 18
	recHeader  = 21
	recInfo    = 200

	infoStreamID = 1

	runRunID       = 1
	runEntity      = 2
	runProject     = 3
	runConfig      = 4
	runGroup       = 6
	runJobType     = 7
	runDisplayName = 8
	runNotes       = 9
	runTags        = 10
	runHost        = 13
	runStartTime   = 17

	tsSeconds = 1
	tsNanos   = 2

	// ConfigItem, HistoryItem and SummaryItem share these numbers.
	itemKey       = 1
	itemNestedKey = 2
	itemValueJSON = 16

	configUpdate  = 1
	historyItem   = 1
	historyStep   = 2
	stepNum       = 1
	summaryUpdate = 1

	filesItems    = 1
	filesItemPath = 1

	exitCode    = 1
	exitRuntime = 2

	headerVersionInfo = 1
	versionProducer   = 1
)

// item is one key/value of a config, history or summary record. A path of
// length one is written as key for config items (as wandb does) and as
// nested_key for history and summary items.
type item struct {
	path      []string
	valueJSON string
}

type runInfo struct {
	id, entity, project, group, jobType, displayName, notes, host string
	tags                                                          []string
	start                                                         time.Time
	config                                                        []item
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func encodeItem(it item, nested bool) []byte {
	var m []byte
	if len(it.path) == 1 && !nested {
		m = appendString(m, itemKey, it.path[0])
	} else {
		for _, p := range it.path {
			m = protowire.AppendTag(m, itemNestedKey, protowire.BytesType)
			m = protowire.AppendString(m, p)
		}
	}
	m = protowire.AppendTag(m, itemValueJSON, protowire.BytesType)
	return protowire.AppendString(m, it.valueJSON)
}

func encodeItems(field protowire.Number, items []item, nested bool) []byte {
	var m []byte
	for _, it := range items {
		m = appendMessage(m, field, encodeItem(it, nested))
	}
	return m
}

// record wraps a record body in Record{num, <field>: body, _info{stream_id}}.
func record(num int64, field protowire.Number, body []byte, streamID string) []byte {
	var b []byte
	b = appendVarint(b, recNum, uint64(num))
	b = appendMessage(b, field, body)
	return appendMessage(b, recInfo, appendString(nil, infoStreamID, streamID))
}

func headerRecord(num int64, streamID, producer string) []byte {
	vi := appendString(nil, versionProducer, producer)
	return record(num, recHeader, appendMessage(nil, headerVersionInfo, vi), streamID)
}

func runRecord(num int64, r runInfo) []byte {
	var m []byte
	m = appendString(m, runRunID, r.id)
	m = appendString(m, runEntity, r.entity)
	m = appendString(m, runProject, r.project)
	m = appendMessage(m, runConfig, encodeItems(configUpdate, r.config, false))
	m = appendString(m, runGroup, r.group)
	m = appendString(m, runJobType, r.jobType)
	m = appendString(m, runDisplayName, r.displayName)
	m = appendString(m, runNotes, r.notes)
	for _, t := range r.tags {
		m = protowire.AppendTag(m, runTags, protowire.BytesType)
		m = protowire.AppendString(m, t)
	}
	m = appendString(m, runHost, r.host)
	var ts []byte
	ts = appendVarint(ts, tsSeconds, uint64(r.start.Unix()))
	ts = appendVarint(ts, tsNanos, uint64(r.start.Nanosecond()))
	m = appendMessage(m, runStartTime, ts)
	return record(num, recRun, m, r.id)
}

func configRecord(num int64, streamID string, items []item) []byte {
	return record(num, recConfig, encodeItems(configUpdate, items, false), streamID)
}

func historyRecord(num int64, streamID string, step int64, items []item) []byte {
	m := encodeItems(historyItem, items, true)
	m = appendMessage(m, historyStep, appendVarint(nil, stepNum, uint64(step)))
	return record(num, recHistory, m, streamID)
}

func summaryRecord(num int64, streamID string, items []item) []byte {
	return record(num, recSummary, encodeItems(summaryUpdate, items, true), streamID)
}

func exitRecord(num int64, streamID string, code int32, runtime int32) []byte {
	var m []byte
	if code != 0 {
		m = appendVarint(m, exitCode, uint64(int64(code)))
	}
	m = appendVarint(m, exitRuntime, uint64(int64(runtime)))
	return record(num, recExit, m, streamID)
}

// filesRecord announces files under the run's files/ directory (paths
// relative to it, with policy NOW), as wandb does for each media file so
// that `wandb sync` uploads them.
func filesRecord(num int64, streamID string, paths []string) []byte {
	var m []byte
	for _, p := range paths {
		m = appendMessage(m, filesItems, appendString(nil, filesItemPath, p))
	}
	return record(num, recFiles, m, streamID)
}
