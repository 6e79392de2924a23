package hardware

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func presetBytes(t testing.TB, name string) []byte {
	t.Helper()
	data, err := presetFS.ReadFile("presets/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRoundTrip(t *testing.T) {
	for _, name := range Names() {
		h := mustPreset(t, name)
		var buf bytes.Buffer
		if err := h.Save(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: Parse(Save()) = %v\n%s", name, err, buf.Bytes())
		}
		if !reflect.DeepEqual(h, back) {
			t.Errorf("%s: round trip changed the hardware:\n%+v\n%+v", name, h, back)
		}
		var again bytes.Buffer
		if err := back.Save(&again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), again.Bytes()) {
			t.Errorf("%s: Save is not deterministic", name)
		}
	}
}

func TestPresetIsACopy(t *testing.T) {
	a := mustPreset(t, "h200")
	a.Device.Peak["bf16"] = 1
	a.Levels[0].Size = 4
	b := mustPreset(t, "h200")
	if b.Device.Peak["bf16"] != 989.4e12 || b.Levels[0].Size != 8 {
		t.Error("changing one Preset result changed another")
	}
}

func TestParseErrors(t *testing.T) {
	good := string(presetBytes(t, "a100-80g"))
	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"hardware: empty input"}},
		{"blank", " \n\t", []string{"hardware: empty input"}},
		{"syntax", "{\n  \"name\": \"x\",\n}", []string{"hardware: line 3, column 1: invalid character '}' looking for beginning of object key string"}},
		{"cut short", good[:100], []string{"hardware: line", "unexpected end of input; the JSON is cut short"}},
		{"trailing data", good + "{}", []string{"unexpected data after the JSON object"}},
		{"not an object", "[1, 2]", []string{"hardware: line 1, column 1: field (top level): got JSON array, want an object"}},
		{"string for number", strings.Replace(good, `"memory_bytes": 80e9`, `"memory_bytes": "80GB"`, 1),
			[]string{"hardware: line 11, column", "field device.memory_bytes: got JSON string, want a number"}},
		{"fractional devices", strings.Replace(good, `"devices": 8,`, `"devices": 8.5,`, 1),
			[]string{"field levels.devices: got JSON number 8.5, want a whole number"}},
		{"unknown field", strings.Replace(good, `"memory_bytes"`, `"memory_gb"`, 1),
			[]string{`hardware: line 11, column 5: unknown field "memory_gb"; did you mean "memory_bytes"?`}},
		{"unknown field far off", strings.Replace(good, `"notes"`, `"comment"`, 1),
			[]string{`unknown field "comment"; compare the spelling with a preset`}},
		{"missing field", strings.Replace(good, `"latency_s": 0.6e-6,`, ``, 1),
			[]string{"hardware: levels[0] (nvlink).latency_s = 0 must be positive"}},
		{"null", "null", []string{"hardware: name is empty", "hardware: levels is empty"}},
		{"empty object", "{}", []string{"hardware: name is empty", "hardware: device.name is empty", "hardware: efficiency.gemm_max_fraction = 0"}},
		{"number too large", strings.Replace(good, `312e12`, `1e400`, 1), []string{"got JSON number 1e400, want a number"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", h)
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Parse error = %q\nwant it to contain %q", err, s)
				}
			}
			if h != nil {
				t.Error("Parse returned a Hardware with its error")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	edited := mustPreset(t, "h100-sxm")
	edited.Name = "my-cluster"
	edited.Levels[1].Bandwidth = 25e9
	path := filepath.Join(dir, "my.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := edited.Save(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("{\n\"name\": \"x\"\n\"device\": {}}"), 0o644); err != nil {
		t.Fatal(err)
	}

	if h, err := Load("h200"); err != nil || h.Name != "h200" {
		t.Errorf("Load(h200) = %v, %v", h, err)
	}
	if h, err := Load(path); err != nil || !reflect.DeepEqual(h, edited) {
		t.Errorf("Load(%s) = %+v, %v; want the saved hardware", path, h, err)
	}
	cases := []struct{ in, want string }{
		{"x", `hardware: unknown hardware "x"; valid names: a100-80g, b200, b300, gb200-nvl72, gb300-nvl72, h100-96g, h100-sxm, h200, mi300x, mi325x, mi355x (or a path to a hardware JSON file)`},
		{"", `hardware: unknown hardware ""; valid names: a100-80g, b200, b300, gb200-nvl72, gb300-nvl72, h100-96g, h100-sxm, h200, mi300x, mi325x, mi355x (or a path to a hardware JSON file)`},
		{filepath.Join(dir, "missing.json"), "hardware: open " + filepath.Join(dir, "missing.json") + ": no such file or directory"},
		{broken, "hardware: " + broken + ": line 3, column 1: invalid character '\"' after object key:value pair"},
	}
	for _, c := range cases {
		if _, err := Load(c.in); err == nil || err.Error() != c.want {
			t.Errorf("Load(%q) error = %v\nwant %s", c.in, err, c.want)
		}
	}
	if _, err := Preset("../presets/h200"); err == nil || !strings.Contains(err.Error(), "unknown hardware") {
		t.Errorf("Preset with a path = %v, want unknown hardware", err)
	}
}

// "host" is whatever a Loader's Host returns (tpsim's commands pass the calibration cache);
// without one, as for Load, it is an unknown name.
func TestLoadHost(t *testing.T) {
	if _, err := Load("host"); err == nil || !strings.Contains(err.Error(), `unknown hardware "host"`) {
		t.Errorf("Load(host) with no loader: %v", err)
	}
	if _, err := Load("hots"); err == nil || strings.Contains(err.Error(), "host,") || strings.Contains(err.Error(), ", host ") {
		t.Errorf("unknown name without a host loader: %v; want host not among the valid names", err)
	}
	want, err := Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	l := Loader{Host: func() (*Hardware, error) { return want, nil }}
	if got, err := l.Load("host"); err != nil || got != want {
		t.Errorf("Load(host) = %v, %v; want the loader's profile", got, err)
	}
	if _, err := l.Load("hots"); err == nil || !strings.Contains(err.Error(), ", host (or a path") {
		t.Errorf("unknown name with a loader set: %v; want host among the valid names", err)
	}
}
