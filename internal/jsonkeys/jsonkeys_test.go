package jsonkeys

import "testing"

func TestFind(t *testing.T) {
	for _, c := range []struct {
		in        string
		want      Dup
		found     bool
		wantWhere string
	}{
		{`{"a": 1, "b": 2}`, Dup{}, false, ""},
		// Column 12 is the closing quote of the second "a" (counted by hand: { " a " : _ 1 , _ " a ").
		{`{"a": 1, "a": 2}`, Dup{"", "a", 1, 12}, true, "a"},
		{"{\"device\": {\"peak_flops\": {\"bf16\": 1,\n  \"bf16\": 2}}}", Dup{"device.peak_flops", "bf16", 2, 8}, true, "device.peak_flops.bf16"},
		// The same key in two objects is not a duplicate; in one element of an array it is.
		{`{"levels": [{"name": "a"}, {"name": "b"}]}`, Dup{}, false, ""},
		{`{"levels": [{"name": "a"}, {"devices": 8, "name": "b", "devices": 0}]}`, Dup{"levels[1]", "devices", 1, 64}, true, "levels[1].devices"},
		// Keys are compared after unescaping, as encoding/json matches them: "\u0061" is "a"
		// (its 8 characters end at column 29).
		{`{"a": [1, {"x": 1}], "\u0061": 2}`, Dup{"", "a", 1, 29}, true, "a"},
		// A value that is a string equal to a key is not a key.
		{`{"a": "a", "b": ["a", "a"]}`, Dup{}, false, ""},
		// Invalid JSON: left to the decoder.
		{`{"a": 1, "b"`, Dup{}, false, ""},
		{`{"a": 1, "b": }`, Dup{}, false, ""},
		{`[1, 2]`, Dup{}, false, ""},
		{`"x"`, Dup{}, false, ""},
	} {
		got, ok := Find([]byte(c.in))
		if ok != c.found || got != c.want {
			t.Errorf("Find(%s) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.found)
		}
		if ok && got.Where() != c.wantWhere {
			t.Errorf("Find(%s).Where() = %q, want %q", c.in, got.Where(), c.wantWhere)
		}
	}
}
