// Package strictjson is Docket's one strict JSON implementation: the
// parser of untrusted documents ([Parse]: no duplicate member names, valid
// UTF-8 and no lone surrogates, bounded size and depth, numbers kept as
// written), RFC 8785 canonicalization ([Canonicalize], JCS), and the checks
// that close the gap between that parser and the decoders that read the
// same bytes afterwards.
//
// encoding/json matches an object's member names to struct fields without
// regard to case ("X" fills the field tagged "x", and of "x" and "X" the
// last one wins), and so do other decoders. A signed or evidence document
// holding two members whose names differ only in case therefore means one
// thing to a verifier that reads the exact name and another to one that
// decodes into a struct. [Fold] is the one case folding every such check
// uses: [CheckFold] and [ParseDocument] refuse such documents, [Decode]
// fills a struct from an already parsed document by exact names only, so a
// verifier decodes a document once, and [Unmarshal] is json.Unmarshal
// behind the same refusals.
//
// The package is internal to the module: the receipts package re-exports
// Parse, ParseObject and Canonicalize for third parties.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// A FoldError reports two members of one object whose names are equal
// under case folding.
type FoldError struct {
	Path string // the object, as a dotted path from the document ("" is the document)
	A, B string // the two names
}

func (e *FoldError) Error() string {
	where := "the document"
	if e.Path != "" {
		where = e.Path
	}
	return fmt.Sprintf("members %q and %q of %s differ only in case", e.A, e.B, where)
}

// CheckFold returns a *FoldError for the first object in v (a document as
// Parse returns it: maps, slices, strings, json.Number, bools and nil) with
// two members whose names are equal under [Fold], which includes the
// folding encoding/json matches field names with (ASCII letters, and each
// other rune as unicode.ToUpper(unicode.ToLower(r)), so that "K" and the
// Kelvin sign U+212A are one name).
func CheckFold(v any) error {
	return checkFold("", v)
}

func checkFold(path string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		if a, b, dup := foldDuplicate(v); dup {
			return &FoldError{Path: path, A: a, B: b}
		}
		for k, e := range v {
			if err := checkFold(join(path, k), e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkFold(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Unknown says what Decode does with members no field names.
type Unknown bool

// What Decode does with members no field names.
const (
	IgnoreUnknown   Unknown = false
	DisallowUnknown Unknown = true
)

// Decode fills dst, a pointer to a struct, from obj, a JSON object as
// receipts.Parse returns it. A field is filled from the member named
// exactly as its json tag (or field name) says, and from no other: a member
// whose name folds to a field's without being it is refused, as is, with
// DisallowUnknown, any member no field names. Fields may be strings, bools,
// integers (from integer literals that fit), pointers to those, structs and
// pointers to structs (from objects), slices of those (from arrays), types
// whose pointer is an [Unmarshaler], and any (the parsed value as is). A
// null member leaves its field as it is.
func Decode(obj map[string]any, dst any, unknown Unknown) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("strictjson: Decode needs a pointer to a struct")
	}
	return decodeStruct("", obj, rv.Elem(), unknown)
}

// A field is a struct field Decode fills: its index and exact name.
type field struct {
	index int
	name  string
}

// fieldsByFold maps a struct type to its fields by the fold of their
// names, and by their names where no fold is that name.
var fieldsByFold sync.Map // reflect.Type → map[string]field

func fieldsOf(st reflect.Type) map[string]field {
	if m, ok := fieldsByFold.Load(st); ok {
		return m.(map[string]field)
	}
	names := make(map[string]field, st.NumField())
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[Fold(name)] = field{i, name}
	}
	for _, f := range names {
		if _, ok := names[f.name]; !ok {
			names[f.name] = f
		}
	}
	fieldsByFold.Store(st, names)
	return names
}

func decodeStruct(path string, obj map[string]any, sv reflect.Value, unknown Unknown) error {
	names := fieldsOf(sv.Type())
	for k, v := range obj {
		f, ok := names[k] // a field's own name, as Docket writes it
		if !ok || f.name != k {
			f, ok = names[Fold(k)]
		}
		if !ok {
			if unknown == DisallowUnknown {
				return fmt.Errorf("%s is not a known member", join(path, k))
			}
			continue
		}
		if k != f.name {
			return fmt.Errorf("member %q is not %q: names are exact", join(path, k), f.name)
		}
		if v == nil {
			continue
		}
		if err := decodeValue(join(path, k), v, sv.Field(f.index), unknown); err != nil {
			return err
		}
	}
	return nil
}

// An Unmarshaler decodes itself from a value as Parse returns it, for a
// member that is not one of the kinds Decode fills.
type Unmarshaler interface {
	UnmarshalParsed(v any) error
}

var unmarshalerParsed = reflect.TypeFor[Unmarshaler]()

func decodeValue(path string, v any, fv reflect.Value, unknown Unknown) error {
	if fv.CanAddr() && fv.Addr().Type().Implements(unmarshalerParsed) {
		if err := fv.Addr().Interface().(Unmarshaler).UnmarshalParsed(v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	switch fv.Kind() {
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s must be an array", path)
		}
		out := reflect.MakeSlice(fv.Type(), len(a), len(a))
		for i, e := range a {
			if e == nil {
				return fmt.Errorf("%s[%d] must not be null", path, i)
			}
			if err := decodeValue(fmt.Sprintf("%s[%d]", path, i), e, out.Index(i), unknown); err != nil {
				return err
			}
		}
		fv.Set(out)
		return nil
	case reflect.Pointer:
		p := reflect.New(fv.Type().Elem())
		if err := decodeValue(path, v, p.Elem(), unknown); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	case reflect.Interface:
		fv.Set(reflect.ValueOf(v))
		return nil
	case reflect.Struct:
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", path)
		}
		return decodeStruct(path, o, fv, unknown)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s must be a string", path)
		}
		fv.SetString(s)
		return nil
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s must be true or false", path)
		}
		fv.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || strings.ContainsAny(string(n), ".eE") || fv.OverflowInt(i) {
			return fmt.Errorf("%s must be an integer", path)
		}
		fv.SetInt(i)
		return nil
	}
	return fmt.Errorf("strictjson: %s: unsupported field type %s", path, fv.Type())
}
