package compare

import (
	"bytes"
	"testing"

	"github.com/tpsim/tpsim/reports"
)

// ParseResults never panics, and what it accepts writes back to JSON and parses again.
func FuzzParseResults(f *testing.F) {
	f.Add([]byte(`{"model": "m", "rows": [{"strategy": "dp", "mesh": "dp=2", "ranks": 2, "predicted": {"time_s": {"step": 0.01}}, "measured": {"time_s": {"step": 0.012}}}]}`))
	f.Add([]byte(`{"rows": []}`))
	f.Add([]byte(`{"rows": [{"predicted": {"time_s": {"step": -1}}}]}`))
	f.Add([]byte(`{"bogus": 1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"rows": [{"strategy": "x", "predicted": {"time_s": {"step": 1e308}}, "measured": {"time_s": {"step": 1}}}]} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseResults(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := reports.WriteJSON(&b, res); err != nil {
			t.Fatalf("accepted results do not encode: %v", err)
		}
		if _, err := ParseResults(b.Bytes()); err != nil {
			t.Fatalf("accepted results do not parse back: %v\n%s", err, b.String())
		}
	})
}
