package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// ParseResults reads a results.json written by tpsim compare, for tpsim plot. It refuses what
// is not one (unknown fields, no rows) and rows whose step times are not positive finite numbers,
// naming the row.
func ParseResults(data []byte) (*Results, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var res Results
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("not a results.json of tpsim compare: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a results.json of tpsim compare: data after its JSON object")
	}
	if len(res.Rows) == 0 {
		return nil, fmt.Errorf("the results have no rows to plot")
	}
	for i, r := range res.Rows {
		for what, v := range map[string]float64{"predicted step": r.Predicted.Time.Step, "measured step": r.Measured.Time.Step} {
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("row %d (%s): %s time %v is not a positive number of seconds", i+1, r.Label(), what, v)
			}
		}
	}
	return &res, nil
}
