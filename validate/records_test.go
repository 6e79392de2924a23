package validate

import (
	"os"
	"strings"
	"testing"
)

// One malformed record is skipped with a reason that names it and the field; the rest of the
// file is read. Messages speak JSON, never Go.
func TestParseMalformedRecords(t *testing.T) {
	data, err := os.ReadFile("testdata/malformed.json")
	if err != nil {
		t.Fatal(err)
	}
	recs, skips, err := Parse("malformed.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != "good" {
		t.Fatalf("read %d records, want the one good one", len(recs))
	}
	want := map[string][]string{
		"tp_string":      {"parallel.tp", "JSON string", "a whole number"},
		"recompute_enum": {"parallel.recompute", `"sometimes"`, "none, selective or full"},
		"record 4":       {`no "id"`},
		"tflops_string":  {"measured.tflops_per_gpu", "a string", "want a number"},
		"zero_enum":      {"parallel.zero_stage", "0, 1, 2 or 3"},
		"count_fraction": {"hardware.count", "number 32.5", "a whole number"},
		"good":           {"id repeats"},
	}
	got := map[string]string{}
	for _, s := range skips {
		got[s.ID] = s.Reason
	}
	if len(got) != len(want) {
		t.Errorf("skips %v, want %d", got, len(want))
	}
	for id, parts := range want {
		for _, p := range parts {
			if !strings.Contains(got[id], p) {
				t.Errorf("%s: reason %q lacks %q", id, got[id], p)
			}
		}
		for _, goName := range []string{"int", "float64", "*", "struct", "Record", "main."} {
			if strings.Contains(strings.ReplaceAll(got[id], "interval", ""), " "+goName+" ") || strings.HasSuffix(got[id], " "+goName) {
				t.Errorf("%s: reason %q names a Go type", id, got[id])
			}
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"empty", "  \n", "x.json is empty"},
		{"no records", "[]", "holds no records"},
		{"object", `{"id": "x"}`, "the file is a JSON object; it must be a JSON array"},
		{"syntax", "[\n  {\"id\": \"a\"},\n  {\"id\": \"b\",}\n]", "x.json:3:"},
	}
	for _, c := range cases {
		_, _, err := Parse("x.json", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Parse never panics, and every record it returns has an id; every skip has a reason.
func FuzzParse(f *testing.F) {
	data, _ := os.ReadFile("testdata/malformed.json")
	f.Add(data)
	f.Add([]byte(`[{"id": "a", "parallel": {"tp": "x"}}]`))
	f.Add([]byte(`[{"id": "a", "measured": {"mfu": [1]}}, 3, null]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, skips, err := Parse("fuzz.json", b)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.ID == "" {
				t.Fatal("record without id returned")
			}
			Compare(&r, Options{}) // must not panic
		}
		for _, s := range skips {
			if s.ID == "" || s.Reason == "" {
				t.Fatalf("skip %+v lacks id or reason", s)
			}
		}
	})
}
