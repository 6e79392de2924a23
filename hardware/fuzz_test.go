package hardware

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, that whatever it accepts validates, round-trips
// through Save, and can be queried without panicking.
func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		data := presetBytes(f, name)
		f.Add(data)
		f.Add(data[:len(data)/2])                         // cut short
		f.Add(append(append([]byte{}, data...), "[]"...)) // trailing data
		f.Add(bytes.Replace(data, []byte(`"devices": 0`), []byte(`"devices": 16`), 1))
	}
	for _, s := range []string{
		"", "{", "}", "null", "[]", "{}", `"x"`, "1e400",
		`{"name": 1}`, `{"nme": "x"}`, `{"levels": [{"devices": -1}]}`,
		`{"device": {"peak_flops": {"bf16": "fast"}}}`,
		`{"name":"x","device":{"name":"d","peak_flops":{"bf16":1},"memory_bytes":1,"mem_bandwidth_bytes_per_s":1},` +
			`"levels":[{"name":"a","devices":2,"bandwidth_bytes_per_s":1,"latency_s":1,"efficiency":1},` +
			`{"name":"b","devices":0,"bandwidth_bytes_per_s":1,"latency_s":1,"efficiency":0.5}],` +
			`"efficiency":{"gemm_max_fraction":1,"gemm_half_flops":1,"mem_max_fraction":1},"sources":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse(data)
		if err != nil {
			if h != nil {
				t.Fatal("Parse returned both a Hardware and an error")
			}
			return
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("Parse accepted hardware that does not validate: %v", err)
		}
		var buf bytes.Buffer
		if err := h.Save(&buf); err != nil {
			t.Fatalf("Save: %v", err)
		}
		back, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("Parse(Save(h)) = %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(h, back) {
			t.Fatalf("round trip changed the hardware:\n%+v\n%+v", h, back)
		}
		for _, span := range []int{1, 2, 8, 9, 1 << 30} {
			if l := h.LevelFor(span); l < 0 || l >= len(h.Levels) {
				t.Fatalf("LevelFor(%d) = %d, out of range", span, l)
			}
		}
		if l := h.LevelFor(1 << 30); l != len(h.Levels)-1 && h.Levels[l].Size < 1<<30 {
			t.Fatalf("LevelFor(2^30) = %d, a level too small", l)
		}
		for k := range h.Device.Peak {
			if _, err := h.PeakFor(k); err != nil {
				t.Fatal(err)
			}
		}
		if e := h.GEMMEfficiency(1e12); !(e > 0 && e <= 1) {
			t.Fatalf("GEMMEfficiency(1e12) = %g, not in (0, 1]", e)
		}
	})
}
