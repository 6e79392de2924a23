package hardware

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/tpsim/tpsim/internal/jsonkeys"
	suggestpkg "github.com/tpsim/tpsim/internal/suggest"
)

//go:embed presets/*.json
var presetFS embed.FS

// Names returns the preset names, sorted.
func Names() []string {
	entries, err := fs.ReadDir(presetFS, "presets")
	if err != nil {
		panic("hardware: embedded presets missing: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Preset returns a fresh copy of the named preset; the caller may change it.
func Preset(name string) (*Hardware, error) {
	data, err := presetFS.ReadFile(path.Join("presets", name+".json"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		return nil, Loader{}.unknownError(name)
	}
	return parse(data, "preset "+name)
}

// HostName is the name of the profile of this machine, measured by `tpsim calibrate`.
const HostName = "host"

// Loader loads hardware by name: a preset, a hardware JSON file, or "host" when Host is set. This
// package does not know where a calibrated profile is kept (exec/calibrate caches it, and imports
// this package), so whoever needs "host" passes a Loader with Host set: tpsim's commands pass
// exec/calibrate's Cached.
type Loader struct {
	// Host returns this machine's profile, for the name "host"; nil: "host" is not a known name.
	Host func() (*Hardware, error)
}

// Load returns the preset called nameOrPath, without a host profile ("host" is not known), or else
// the hardware described by the JSON file at that path.
func Load(nameOrPath string) (*Hardware, error) { return Loader{}.Load(nameOrPath) }

// Load returns the preset called nameOrPath, the host profile for "host" (l.Host), or else the
// hardware described by the JSON file at that path.
func (l Loader) Load(nameOrPath string) (*Hardware, error) {
	if nameOrPath == HostName && l.Host != nil {
		return l.Host()
	}
	if slices.Contains(Names(), nameOrPath) {
		return Preset(nameOrPath)
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !looksLikePath(nameOrPath) {
			return nil, l.unknownError(nameOrPath)
		}
		return nil, fmt.Errorf("hardware: %w", err)
	}
	return parse(data, nameOrPath)
}

func looksLikePath(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(strings.ToLower(s), ".json")
}

func (l Loader) unknownError(name string) error {
	names := Names()
	if l.Host != nil {
		names = append(names, HostName)
	}
	return fmt.Errorf("hardware: unknown hardware %q; valid names: %s (or a path to a hardware JSON file)",
		name, strings.Join(names, ", "))
}

// Parse decodes a hardware description from JSON and validates it. Unknown fields, a key given
// twice in one object, trailing data, missing or zero fields and figures out of their range are
// errors; syntax errors give the line and column.
func Parse(data []byte) (*Hardware, error) { return parse(data, "") }

// parse is Parse with src (a file name, or "preset x") named in every error.
func parse(data []byte, src string) (*Hardware, error) {
	prefix := "hardware: "
	if src != "" {
		prefix += src + ": "
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(prefix + "empty input; expected a JSON object like a preset (see Names and Save)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var h Hardware
	if err := dec.Decode(&h); err != nil {
		return nil, errors.New(prefix + decodeMessage(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		off := int(dec.InputOffset())
		return nil, fmt.Errorf("%s%s: unexpected data after the JSON object; a file holds one hardware description", prefix, position(data, off))
	}
	if d, ok := jsonkeys.Find(data); ok {
		return nil, fmt.Errorf("%sline %d, column %d: %s is given twice; keep one (a JSON decoder would silently take the last)", prefix, d.Line, d.Col, d.Where())
	}
	if len(h.Sources) == 0 {
		h.Sources = nil // so that Save and Parse round-trip: Save omits an empty map
	}
	if p := h.problems(); len(p) > 0 {
		errs := make([]error, len(p))
		for i, s := range p {
			errs[i] = errors.New(prefix + s)
		}
		return nil, errors.Join(errs...)
	}
	return &h, nil
}

var unknownFieldRE = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// decodeMessage turns an encoding/json error into one that names the place and the fix.
func decodeMessage(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s: %s", position(data, int(syn.Offset)), syn.Error())
	case errors.As(err, &typ):
		want := typ.Type.String()
		switch typ.Type.Kind() {
		case reflect.Float64:
			want = "a number"
		case reflect.Int:
			want = "a whole number"
		case reflect.String:
			want = "a string"
		case reflect.Map, reflect.Struct:
			want = "an object"
		case reflect.Slice:
			want = "an array"
		}
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Sprintf("%s: field %s: got JSON %s, want %s", position(data, int(typ.Offset)), field, typ.Value, want)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("%s: unexpected end of input; the JSON is cut short", position(data, len(data)))
	}
	if m := unknownFieldRE.FindStringSubmatch(err.Error()); m != nil {
		name := m[1]
		msg := fmt.Sprintf("unknown field %q", name)
		if loc := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `"\s*:`).FindIndex(data); loc != nil {
			msg = position(data, loc[0]+1) + ": " + msg
		}
		if s := suggest(name); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += "; compare the spelling with a preset (Save writes one)"
		}
		return msg
	}
	return err.Error()
}

// position gives "line L, column C" (both from 1) of the byte at offset-1, the last byte the
// decoder read, which is where encoding/json's offsets point.
func position(data []byte, offset int) string {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Sprintf("line %d, column %d", line, max(col, 1))
}

// suggest returns the known JSON field name closest to name: one within an edit distance of a
// third of its length, or else one with the same first word ("memory_gb" -> "memory_bytes").
func suggest(name string) string {
	name = strings.ToLower(name)
	best, bestD := "", len(name)/3+1
	for _, k := range fieldNames() {
		if d := suggestpkg.Distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	stem, _, _ := strings.Cut(name, "_")
	for _, k := range fieldNames() {
		if s, _, _ := strings.Cut(k, "_"); len(stem) >= 3 && s == stem {
			return k
		}
	}
	return ""
}

// fieldNames lists the JSON field names of Hardware and everything in it.
func fieldNames() []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" && n != "-" {
					names = append(names, n)
				}
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[Hardware]())
	slices.Sort(names)
	return slices.Compact(names)
}

// Save writes h as indented JSON that Parse reads back to an equal Hardware. The output is
// deterministic: fields in declaration order, map keys sorted.
func (h *Hardware) Save(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("hardware: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("hardware: write: %w", err)
	}
	return nil
}
