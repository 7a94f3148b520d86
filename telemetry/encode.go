package telemetry

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Field numbers of opentelemetry/proto (collector/trace/v1, trace/v1,
// common/v1, resource/v1) that encodeProto writes.
const (
	fReqResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fRSResource   = 1 // ResourceSpans.resource
	fRSScopeSpans = 2 // ResourceSpans.scope_spans
	fResAttrs     = 1 // Resource.attributes

	fSSScope     = 1 // ScopeSpans.scope
	fSSSpans     = 2 // ScopeSpans.spans
	fScopeName   = 1 // InstrumentationScope.name
	fScopeVer    = 2 // InstrumentationScope.version
	fSpanTraceID = 1
	fSpanSpanID  = 2
	fSpanState   = 3
	fSpanParent  = 4
	fSpanName    = 5
	fSpanKind    = 6
	fSpanStart   = 7 // fixed64
	fSpanEnd     = 8 // fixed64
	fSpanAttrs   = 9
	fSpanStatus  = 15
	fSpanFlags   = 16 // fixed32
	fStatusMsg   = 2
	fStatusCode  = 3

	fKVKey     = 1
	fKVValue   = 2
	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4 // fixed64
	fAnyArray  = 5
	fArrValues = 1
)

// Protobuf wire types.
const (
	wireVarint = 0
	wireI64    = 1
	wireLen    = 2
	wireI32    = 5
)

// pb is a protobuf message being written (the wire format by hand: the
// protobuf runtime's package initialisation is what this package avoids).
type pb []byte

func (b pb) tag(field, wire int) pb { return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire)) }

func (b pb) varint(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(b.tag(field, wireVarint), v)
}

func (b pb) fixed64(field int, v uint64) pb {
	return binary.LittleEndian.AppendUint64(b.tag(field, wireI64), v)
}

func (b pb) bytes(field int, v []byte) pb {
	b = binary.AppendUvarint(b.tag(field, wireLen), uint64(len(v)))
	return append(b, v...)
}

func (b pb) str(field int, s string) pb {
	if s == "" {
		return b
	}
	b = binary.AppendUvarint(b.tag(field, wireLen), uint64(len(s)))
	return append(b, s...)
}

func protoAny(kind string, val any) pb {
	var a pb
	switch kind {
	case "bool":
		// bool_value is in a oneof: written even when false.
		v := uint64(0)
		if val.(bool) {
			v = 1
		}
		a = binary.AppendUvarint(a.tag(fAnyBool, wireVarint), v)
	case "int":
		a = binary.AppendUvarint(a.tag(fAnyInt, wireVarint), uint64(val.(int64)))
	case "double":
		a = a.fixed64(fAnyDouble, math.Float64bits(val.(float64)))
	case "strings":
		var arr pb
		for _, s := range val.([]string) {
			arr = arr.bytes(fArrValues, protoAny("string", s))
		}
		a = a.bytes(fAnyArray, arr)
	default:
		s := val.(string)
		a = binary.AppendUvarint(a.tag(fAnyString, wireLen), uint64(len(s)))
		a = append(a, s...)
	}
	return a
}

func protoAttrs(b pb, field int, kvs []attribute.KeyValue) pb {
	for _, kv := range kvs {
		var m pb
		m = m.str(fKVKey, string(kv.Key))
		m = m.bytes(fKVValue, protoAny(attrValue(kv.Value)))
		b = b.bytes(field, m)
	}
	return b
}

// encodeProto is the binary protobuf ExportTraceServiceRequest of spans.
func encodeProto(spans []sdktrace.ReadOnlySpan) []byte {
	var req pb
	for _, g := range groups(spans) {
		var res, scope, ss, rs pb
		res = protoAttrs(res, fResAttrs, g.res.Attributes())
		scope = scope.str(fScopeName, g.scope.Name).str(fScopeVer, g.scope.Version)
		ss = ss.bytes(fSSScope, scope)
		for _, s := range g.spans {
			sc := s.SpanContext()
			tid, sid := sc.TraceID(), sc.SpanID()
			var m pb
			m = m.bytes(fSpanTraceID, tid[:]).bytes(fSpanSpanID, sid[:])
			m = m.str(fSpanState, sc.TraceState().String())
			if p := s.Parent(); p.SpanID().IsValid() {
				psid := p.SpanID()
				m = m.bytes(fSpanParent, psid[:])
			}
			m = m.str(fSpanName, s.Name()).varint(fSpanKind, uint64(s.SpanKind()))
			m = m.fixed64(fSpanStart, uint64(s.StartTime().UnixNano()))
			m = m.fixed64(fSpanEnd, uint64(s.EndTime().UnixNano()))
			m = protoAttrs(m, fSpanAttrs, s.Attributes())
			if st := s.Status(); st.Code != codes.Unset {
				var sm pb
				sm = sm.str(fStatusMsg, st.Description).varint(fStatusCode, statusCode(st.Code))
				m = m.bytes(fSpanStatus, sm)
			}
			m = binary.LittleEndian.AppendUint32(m.tag(fSpanFlags, wireI32), uint32(sc.TraceFlags()))
			ss = ss.bytes(fSSSpans, m)
		}
		rs = rs.bytes(fRSResource, res).bytes(fRSScopeSpans, ss)
		req = req.bytes(fReqResourceSpans, rs)
	}
	return req
}

// statusCode is OTLP's Status.StatusCode (UNSET 0, OK 1, ERROR 2).
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// The OTLP/JSON form (protobuf's JSON mapping with OTLP's exceptions:
// trace and span ids in hex, enums as numbers).
type (
	jsonReq struct {
		ResourceSpans []jsonRS `json:"resourceSpans"`
	}
	jsonRS struct {
		Resource   jsonRes  `json:"resource"`
		ScopeSpans []jsonSS `json:"scopeSpans"`
	}
	jsonRes struct {
		Attributes []jsonKV `json:"attributes"`
	}
	jsonSS struct {
		Scope jsonScope  `json:"scope"`
		Spans []jsonSpan `json:"spans"`
	}
	jsonScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	jsonSpan struct {
		TraceID      string      `json:"traceId"`
		SpanID       string      `json:"spanId"`
		TraceState   string      `json:"traceState,omitempty"`
		ParentSpanID string      `json:"parentSpanId,omitempty"`
		Flags        uint32      `json:"flags,omitempty"`
		Name         string      `json:"name"`
		Kind         int         `json:"kind"`
		Start        string      `json:"startTimeUnixNano"`
		End          string      `json:"endTimeUnixNano"`
		Attributes   []jsonKV    `json:"attributes,omitempty"`
		Status       *jsonStatus `json:"status,omitempty"`
	}
	jsonStatus struct {
		Message string `json:"message,omitempty"`
		Code    uint64 `json:"code"`
	}
	jsonKV struct {
		Key   string  `json:"key"`
		Value jsonAny `json:"value"`
	}
	jsonAny struct {
		String *string    `json:"stringValue,omitempty"`
		Bool   *bool      `json:"boolValue,omitempty"`
		Int    string     `json:"intValue,omitempty"`
		Double *float64   `json:"doubleValue,omitempty"`
		Array  *jsonArray `json:"arrayValue,omitempty"`
	}
	jsonArray struct {
		Values []jsonAny `json:"values"`
	}
)

func jsonValue(kind string, val any) jsonAny {
	switch kind {
	case "bool":
		v := val.(bool)
		return jsonAny{Bool: &v}
	case "int":
		return jsonAny{Int: strconv.FormatInt(val.(int64), 10)}
	case "double":
		v := val.(float64)
		return jsonAny{Double: &v}
	case "strings":
		arr := &jsonArray{Values: []jsonAny{}}
		for _, s := range val.([]string) {
			arr.Values = append(arr.Values, jsonValue("string", s))
		}
		return jsonAny{Array: arr}
	}
	s := val.(string)
	return jsonAny{String: &s}
}

func jsonAttrs(kvs []attribute.KeyValue) []jsonKV {
	out := make([]jsonKV, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, jsonKV{Key: string(kv.Key), Value: jsonValue(attrValue(kv.Value))})
	}
	return out
}

// encodeJSON is the OTLP/JSON ExportTraceServiceRequest of spans.
func encodeJSON(spans []sdktrace.ReadOnlySpan) []byte {
	var req jsonReq
	for _, g := range groups(spans) {
		ss := jsonSS{Scope: jsonScope{Name: g.scope.Name, Version: g.scope.Version}}
		for _, s := range g.spans {
			sc := s.SpanContext()
			tid, sid := sc.TraceID(), sc.SpanID()
			js := jsonSpan{TraceID: hex.EncodeToString(tid[:]), SpanID: hex.EncodeToString(sid[:]),
				TraceState: sc.TraceState().String(), Flags: uint32(sc.TraceFlags()), Name: s.Name(), Kind: int(s.SpanKind()),
				Start: strconv.FormatInt(s.StartTime().UnixNano(), 10), End: strconv.FormatInt(s.EndTime().UnixNano(), 10),
				Attributes: jsonAttrs(s.Attributes())}
			if p := s.Parent(); p.SpanID().IsValid() {
				psid := p.SpanID()
				js.ParentSpanID = hex.EncodeToString(psid[:])
			}
			if st := s.Status(); st.Code != codes.Unset {
				js.Status = &jsonStatus{Message: st.Description, Code: statusCode(st.Code)}
			}
			ss.Spans = append(ss.Spans, js)
		}
		req.ResourceSpans = append(req.ResourceSpans, jsonRS{Resource: jsonRes{Attributes: jsonAttrs(g.res.Attributes())}, ScopeSpans: []jsonSS{ss}})
	}
	b, _ := json.Marshal(req)
	return b
}
