package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Record is one record of runs.json: the fields validate reads (others are ignored). The format
// is described in data/README.md.
type Record struct {
	ID     string `json:"id"`
	Source struct {
		Title    string `json:"title"`
		Repo     string `json:"repo"`
		Path     string `json:"path"`
		Location string `json:"location"`
	} `json:"source"`
	Model struct {
		Name    string   `json:"name"`
		Params  *float64 `json:"params"`
		Layers  *int     `json:"layers"`
		Hidden  *int     `json:"hidden"`
		Heads   *int     `json:"heads"`
		KVHeads *int     `json:"kv_heads"`
		Seq     *int     `json:"seq_len"`
		Vocab   *int     `json:"vocab"`
		FFN     *int     `json:"ffn"`
	} `json:"model"`
	Hardware struct {
		GPU         string   `json:"gpu"`
		MemoryGB    *float64 `json:"gpu_memory_gb"`
		Count       *int     `json:"count"`
		GPUsPerNode *int     `json:"gpus_per_node"`
		InterNode   *string  `json:"inter_node_link"`
	} `json:"hardware"`
	Parallel struct {
		TP            *int    `json:"tp"`
		PP            *int    `json:"pp"`
		DP            *int    `json:"dp"`
		CP            *int    `json:"cp"`
		EP            *int    `json:"ep"`
		SP            *bool   `json:"sp"`
		ZeRO          *int    `json:"zero_stage"`
		FSDP          *bool   `json:"fsdp"`
		Recompute     *string `json:"recompute"`
		Microbatch    *int    `json:"microbatch"`
		GlobalBatch   *int    `json:"global_batch"`
		GradAccum     *int    `json:"grad_accum"`
		VirtualStages *int    `json:"virtual_stages"`
		Interleaved   *bool   `json:"interleaved"`
	} `json:"parallel"`
	Precision string                     `json:"precision"`
	Measured  map[string]json.RawMessage `json:"measured"`
	Derived   map[string]json.RawMessage `json:"derived"`
	Flags     []string                   `json:"flags"`
	Notes     string                     `json:"notes"`
}

// Skip is a record that could not be compared, and why.
type Skip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Parse reads a file of records (name is how messages call it). A file that is not JSON, not an
// array, or empty is an error, with the line and column of a syntax error. A record that cannot be
// read (a string where a number belongs, an unknown enum value, no id, an id seen before) is
// skipped with a reason naming its id and the field; the others are returned.
func Parse(name string, data []byte) ([]Record, []Skip, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, fmt.Errorf("%s is empty; give a JSON array of run records (the format of validate/data/runs.json)", name)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(data, se.Offset)
			return nil, nil, fmt.Errorf("%s:%d:%d: not valid JSON: %s", name, line, col, strings.TrimPrefix(se.Error(), "json: "))
		case errors.As(err, &te):
			return nil, nil, fmt.Errorf("%s: the file is a JSON %s; it must be a JSON array of run records (the format of validate/data/runs.json)", name, te.Value)
		}
		return nil, nil, fmt.Errorf("%s: not a JSON array of run records: %v", name, err)
	}
	if len(raws) == 0 {
		return nil, nil, fmt.Errorf("%s holds no records; give a JSON array of run records", name)
	}
	var recs []Record
	var skips []Skip
	seen := map[string]bool{}
	for i, raw := range raws {
		r, why := parseRecord(raw)
		id := r.ID
		if id == "" {
			id = fmt.Sprintf("record %d", i+1)
		}
		if why == "" && seen[r.ID] {
			why = "id repeats an earlier record's; give each record its own id"
		}
		if why != "" {
			skips = append(skips, Skip{ID: id, Reason: "unreadable record: " + why})
			continue
		}
		seen[r.ID] = true
		recs = append(recs, r)
	}
	return recs, skips, nil
}

// parseRecord decodes one record, or says which field is wrong.
func parseRecord(raw json.RawMessage) (Record, string) {
	var r Record
	var head struct {
		ID any `json:"id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return r, "not a JSON object"
	}
	id, ok := head.ID.(string)
	if !ok || strings.TrimSpace(id) == "" {
		return r, `no "id" (a non-empty string)`
	}
	r.ID = id
	if err := json.Unmarshal(raw, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return r, fmt.Sprintf("field %s is a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type))
		}
		return r, err.Error()
	}
	r.ID = id
	if why := r.checkEnums(); why != "" {
		return r, why
	}
	return r, ""
}

// checkEnums rejects values outside a field's closed set, and impossible numbers.
func (r *Record) checkEnums() string {
	p := &r.Parallel
	if p.Recompute != nil {
		rc := strings.ToLower(strings.TrimSpace(*p.Recompute))
		if !strings.HasPrefix(rc, "none") && !strings.HasPrefix(rc, "selective") && !strings.HasPrefix(rc, "full") {
			return fmt.Sprintf("field parallel.recompute is %q; use none, selective or full", *p.Recompute)
		}
	}
	if p.ZeRO != nil && (*p.ZeRO < 0 || *p.ZeRO > 3) {
		return fmt.Sprintf("field parallel.zero_stage is %d; use 0, 1, 2 or 3", *p.ZeRO)
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"parallel.tp", p.TP}, {"parallel.pp", p.PP}, {"parallel.dp", p.DP}, {"parallel.cp", p.CP},
		{"parallel.microbatch", p.Microbatch}, {"parallel.global_batch", p.GlobalBatch}, {"hardware.count", r.Hardware.Count},
		{"model.layers", r.Model.Layers}, {"model.hidden", r.Model.Hidden}, {"model.heads", r.Model.Heads}, {"model.seq_len", r.Model.Seq}} {
		if f.v != nil && *f.v < 1 {
			return fmt.Sprintf("field %s is %d; it must be at least 1 (or null when not stated)", f.name, *f.v)
		}
	}
	for _, m := range []struct {
		name string
		m    map[string]json.RawMessage
	}{{"measured", r.Measured}, {"derived", r.Derived}} {
		for _, k := range Metrics {
			raw, ok := m.m[k]
			if !ok || string(bytes.TrimSpace(raw)) == "null" {
				continue
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Sprintf("field %s.%s is %s, want a number", m.name, k, describeJSON(raw))
			}
		}
	}
	return ""
}

// jsonKind names the JSON value a Go type reads, for messages that must not show Go types.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// describeJSON says what kind of JSON value raw is, with the value when short.
func describeJSON(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	kind := "a value"
	switch {
	case strings.HasPrefix(s, `"`):
		kind = "a string"
	case strings.HasPrefix(s, "{"):
		return "an object"
	case strings.HasPrefix(s, "["):
		return "a list"
	case s == "true" || s == "false":
		kind = "true or false"
	}
	if len(s) <= 40 {
		return kind + " " + s
	}
	return kind
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// number returns a numeric field of a measured or derived object.
func number(m map[string]json.RawMessage, key string) (float64, bool) {
	raw, ok := m[key]
	if !ok {
		return 0, false
	}
	var v *float64
	if json.Unmarshal(raw, &v) != nil || v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return 0, false
	}
	return *v, true
}
