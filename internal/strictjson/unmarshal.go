package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Unmarshal decodes one JSON document into v as json.Unmarshal does,
// but first refuses what encoding/json lets through silently, so that a
// signed or evidence document means one thing to every reader:
//   - two members of one object whose names are equal under [Fold] ("kind"
//     and "KIND", or "kind" and "\u212aind" with the Kelvin sign):
//     encoding/json keeps the last, other parsers the first;
//   - a member that names no field of the struct it decodes into exactly:
//     encoding/json matches names case-insensitively and skips unknown ones;
//   - invalid UTF-8, which encoding/json replaces with U+FFFD;
//   - nesting deeper than MaxDepth, and data after the document.
//
// Members decoded into an interface or a json.RawMessage are checked for
// folded duplicates only. Unlike Parse, Unmarshal has no size limit:
// its caller bounds what it reads.
func Unmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkMembers(dec, reflect.TypeOf(v), 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the document at byte %d", dec.InputOffset())
	}
	return json.Unmarshal(data, v)
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// checkMembers reads one value from dec and checks its members against t,
// the type it decodes into (nil: anything).
func checkMembers(dec *json.Decoder, t reflect.Type, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t == rawMessageType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return fmt.Errorf("nesting deeper than %d", MaxDepth)
	}
	switch d {
	case '{':
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = make(map[string]reflect.Type)
			jsonFields(t, fields)
		}
		seen := make(map[string]string)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name := tok.(string)
			key := Fold(name)
			if prev, dup := seen[key]; dup {
				return fmt.Errorf("members %q and %q of one object differ only in case", prev, name)
			}
			seen[key] = name
			var elem reflect.Type
			switch {
			case fields != nil:
				ft, ok := fields[name]
				if !ok {
					return fmt.Errorf("unknown member %q", name)
				}
				elem = ft
			case t != nil && t.Kind() == reflect.Map:
				elem = t.Elem()
			}
			if err := checkMembers(dec, elem, depth+1); err != nil {
				return err
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkMembers(dec, elem, depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// jsonFields adds the member names of struct type t, as encoding/json names
// them, with their types; embedded structs without a name add theirs.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = ft
		}
	}
}
