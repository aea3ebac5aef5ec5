package tensorboard

import (
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// Hand-written encoders for the few TensorBoard protos the writer needs
// (tensorboard/compat/proto: event.proto, summary.proto, tensor.proto,
// tensor_shape.proto; tensorboard/plugins/hparams: plugin_data.proto,
// api.proto; google/protobuf/struct.proto). Field numbers are noted beside
// each encoder.

const (
	// Event
	evWallTime    = 1 // double
	evStep        = 2 // int64
	evFileVersion = 3 // string (oneof what)
	evSummary     = 5 // Summary (oneof what)

	// Summary
	sumValue = 1 // repeated Value

	// Summary.Value
	valTag         = 1 // string
	valSimpleValue = 2 // float
	valImage       = 4 // Summary.Image
	valTensor      = 8 // TensorProto
	valMetadata    = 9 // SummaryMetadata

	// SummaryMetadata
	mdPluginData = 1 // PluginData{1 plugin_name, 2 content}
	mdDataClass  = 4 // DataClass enum

	// DataClass
	dataClassScalar = 1
	dataClassTensor = 2

	// Summary.Image
	imgHeight     = 1
	imgWidth      = 2
	imgColorspace = 3
	imgEncoded    = 4

	// TensorProto
	tpDtype     = 1 // DataType: DT_FLOAT=1, DT_STRING=7
	tpShape     = 2 // TensorShapeProto{2 repeated Dim{1 size}}
	tpStringVal = 8
	dtString    = 7
)

// appendScalarValue appends one Summary.value entry {tag, simple_value} to b
// (b is inside a Summary message).
func appendScalarValue(b []byte, tag string, v float64) []byte {
	inner := protowire.SizeTag(valTag) + protowire.SizeBytes(len(tag)) + protowire.SizeTag(valSimpleValue) + protowire.SizeFixed32()
	b = protowire.AppendTag(b, sumValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = protowire.AppendTag(b, valTag, protowire.BytesType)
	b = protowire.AppendString(b, tag)
	b = protowire.AppendTag(b, valSimpleValue, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(float32(v)))
}

// scalarValueSize is the encoded size of appendScalarValue's output.
func scalarValueSize(tag string) int {
	inner := protowire.SizeTag(valTag) + protowire.SizeBytes(len(tag)) + protowire.SizeTag(valSimpleValue) + protowire.SizeFixed32()
	return protowire.SizeTag(sumValue) + protowire.SizeBytes(inner)
}

// appendEventHeader appends wall_time and step.
func appendEventHeader(b []byte, wall float64, step int64) []byte {
	b = protowire.AppendTag(b, evWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(wall))
	if step != 0 {
		b = protowire.AppendTag(b, evStep, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(step))
	}
	return b
}

// fileVersionEvent is the first event of every file.
func fileVersionEvent(wall float64) []byte {
	b := appendEventHeader(nil, wall, 0)
	b = protowire.AppendTag(b, evFileVersion, protowire.BytesType)
	return protowire.AppendString(b, "brain.Event:2")
}

// summaryEvent wraps encoded Summary.value entries into an Event.
func summaryEvent(b []byte, wall float64, step int64, summary []byte) []byte {
	b = appendEventHeader(b, wall, step)
	b = protowire.AppendTag(b, evSummary, protowire.BytesType)
	return protowire.AppendBytes(b, summary)
}

// pluginMetadata encodes SummaryMetadata{plugin_data{plugin_name, content}, data_class}.
func pluginMetadata(plugin string, content []byte, dataClass int) []byte {
	var pd []byte
	pd = protowire.AppendTag(pd, 1, protowire.BytesType)
	pd = protowire.AppendString(pd, plugin)
	if len(content) > 0 {
		pd = protowire.AppendTag(pd, 2, protowire.BytesType)
		pd = protowire.AppendBytes(pd, content)
	}
	var md []byte
	md = protowire.AppendTag(md, mdPluginData, protowire.BytesType)
	md = protowire.AppendBytes(md, pd)
	if dataClass != 0 {
		md = protowire.AppendTag(md, mdDataClass, protowire.VarintType)
		md = protowire.AppendVarint(md, uint64(dataClass))
	}
	return md
}

// appendValue appends a Summary.value entry from its encoded fields.
func appendValue(b []byte, fields []byte) []byte {
	b = protowire.AppendTag(b, sumValue, protowire.BytesType)
	return protowire.AppendBytes(b, fields)
}

// textValueFields encodes Value{tag, metadata(text plugin), tensor DT_STRING [1]}.
func textValueFields(tag, text string) []byte {
	var shape []byte
	var dim []byte
	dim = protowire.AppendTag(dim, 1, protowire.VarintType)
	dim = protowire.AppendVarint(dim, 1)
	shape = protowire.AppendTag(shape, 2, protowire.BytesType)
	shape = protowire.AppendBytes(shape, dim)

	var tensor []byte
	tensor = protowire.AppendTag(tensor, tpDtype, protowire.VarintType)
	tensor = protowire.AppendVarint(tensor, dtString)
	tensor = protowire.AppendTag(tensor, tpShape, protowire.BytesType)
	tensor = protowire.AppendBytes(tensor, shape)
	tensor = protowire.AppendTag(tensor, tpStringVal, protowire.BytesType)
	tensor = protowire.AppendString(tensor, text)

	var v []byte
	v = protowire.AppendTag(v, valTag, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	v = protowire.AppendTag(v, valMetadata, protowire.BytesType)
	v = protowire.AppendBytes(v, pluginMetadata("text", nil, dataClassTensor))
	v = protowire.AppendTag(v, valTensor, protowire.BytesType)
	return protowire.AppendBytes(v, tensor)
}

// imageValueFields encodes Value{tag, image{height, width, colorspace, encoded}}.
func imageValueFields(tag string, png []byte, height, width, colorspace int) []byte {
	var img []byte
	img = protowire.AppendTag(img, imgHeight, protowire.VarintType)
	img = protowire.AppendVarint(img, uint64(height))
	img = protowire.AppendTag(img, imgWidth, protowire.VarintType)
	img = protowire.AppendVarint(img, uint64(width))
	img = protowire.AppendTag(img, imgColorspace, protowire.VarintType)
	img = protowire.AppendVarint(img, uint64(colorspace))
	img = protowire.AppendTag(img, imgEncoded, protowire.BytesType)
	img = protowire.AppendBytes(img, png)

	var v []byte
	v = protowire.AppendTag(v, valTag, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	v = protowire.AppendTag(v, valImage, protowire.BytesType)
	return protowire.AppendBytes(v, img)
}

// hparamsValueFields encodes Value{tag, metadata(hparams plugin, content)}
// with no value, as TensorBoard's own hparams summary does.
func hparamsValueFields(tag string, content []byte) []byte {
	var v []byte
	v = protowire.AppendTag(v, valTag, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	v = protowire.AppendTag(v, valMetadata, protowire.BytesType)
	return protowire.AppendBytes(v, pluginMetadata("hparams", content, 0))
}

// hparam is one hyperparameter: exactly one of the value fields is used,
// chosen by kind.
type hparam struct {
	name string
	kind int // dataTypeString, dataTypeBool, dataTypeFloat64
	num  float64
	str  string
	bool bool
}

// hparams api.proto DataType.
const (
	dataTypeString  = 1
	dataTypeBool    = 2
	dataTypeFloat64 = 3
)

// protoValue encodes google.protobuf.Value{2 number_value | 3 string_value | 4 bool_value}.
func (h hparam) protoValue() []byte {
	var b []byte
	switch h.kind {
	case dataTypeFloat64:
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(h.num))
	case dataTypeBool:
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(h.bool))
	default:
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, h.str)
	}
	return b
}

// pluginData wraps one HParamsPluginData oneof member (field, msg) with version 0.
func pluginData(field protowire.Number, msg []byte) []byte {
	// version = 0 is the proto3 default and is not encoded.
	var b []byte
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// experimentContent encodes HParamsPluginData{experiment: Experiment{
// 3 time_created_secs, 4 repeated HParamInfo{1 name, 4 type},
// 5 repeated MetricInfo{1 name: MetricName{1 group, 2 tag}}}}.
func experimentContent(hps []hparam, metrics []string, created float64) []byte {
	var exp []byte
	exp = protowire.AppendTag(exp, 3, protowire.Fixed64Type)
	exp = protowire.AppendFixed64(exp, math.Float64bits(created))
	for _, h := range hps {
		var info []byte
		info = protowire.AppendTag(info, 1, protowire.BytesType)
		info = protowire.AppendString(info, h.name)
		info = protowire.AppendTag(info, 4, protowire.VarintType)
		info = protowire.AppendVarint(info, uint64(h.kind))
		exp = protowire.AppendTag(exp, 4, protowire.BytesType)
		exp = protowire.AppendBytes(exp, info)
	}
	for _, m := range metrics {
		var name []byte
		name = protowire.AppendTag(name, 2, protowire.BytesType)
		name = protowire.AppendString(name, m)
		var info []byte
		info = protowire.AppendTag(info, 1, protowire.BytesType)
		info = protowire.AppendBytes(info, name)
		exp = protowire.AppendTag(exp, 5, protowire.BytesType)
		exp = protowire.AppendBytes(exp, info)
	}
	return pluginData(2, exp)
}

// sessionStartContent encodes HParamsPluginData{session_start_info:
// SessionStartInfo{1 map<string, Value> hparams, 4 group_name, 5 start_time_secs}}.
func sessionStartContent(hps []hparam, group string, start float64) []byte {
	sorted := append([]hparam(nil), hps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var ssi []byte
	for _, h := range sorted {
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, h.name)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, h.protoValue())
		ssi = protowire.AppendTag(ssi, 1, protowire.BytesType)
		ssi = protowire.AppendBytes(ssi, entry)
	}
	if group != "" {
		ssi = protowire.AppendTag(ssi, 4, protowire.BytesType)
		ssi = protowire.AppendString(ssi, group)
	}
	ssi = protowire.AppendTag(ssi, 5, protowire.Fixed64Type)
	ssi = protowire.AppendFixed64(ssi, math.Float64bits(start))
	return pluginData(3, ssi)
}

// Session status (api.proto Status).
const (
	statusSuccess = 1
	statusFailure = 2
)

// sessionEndContent encodes HParamsPluginData{session_end_info:
// SessionEndInfo{1 status, 2 end_time_secs}}.
func sessionEndContent(status int, end float64) []byte {
	var sei []byte
	sei = protowire.AppendTag(sei, 1, protowire.VarintType)
	sei = protowire.AppendVarint(sei, uint64(status))
	sei = protowire.AppendTag(sei, 2, protowire.Fixed64Type)
	sei = protowire.AppendFixed64(sei, math.Float64bits(end))
	return pluginData(4, sei)
}

// appendSummaryTag starts the Event's summary field of the given encoded size.
func appendSummaryTag(b []byte, size int) []byte {
	b = protowire.AppendTag(b, evSummary, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(size))
}
