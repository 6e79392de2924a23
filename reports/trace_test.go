package reports

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriteChromeTrace(t *testing.T) {
	spans := []Span{
		{Process: "rank 0", Thread: "compute", Name: "linear 0", Cat: "forward", Start: 0, Dur: 0.001},
		{Process: "rank 0", Thread: "communication", Name: "all_reduce 0", Cat: "forward", Start: 0.001, Dur: 0.0005},
		{Process: "rank 1", Thread: "compute", Name: "linear 0", Cat: "forward", Start: 0, Dur: 0.002},
	}
	var a, b bytes.Buffer
	if err := WriteChromeTrace(&a, spans); err != nil {
		t.Fatal(err)
	}
	if err := WriteChromeTrace(&b, spans); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same spans gave different bytes")
	}
	var doc struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Ts   float64
			Dur  float64
			Pid  int
			Tid  int
		}
	}
	if err := json.Unmarshal(a.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var x []int
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			x = append(x, e.Pid*10+e.Tid)
			if e.Name == "all_reduce 0" && (e.Ts != 1000 || e.Dur != 500) {
				t.Errorf("all_reduce at %g us for %g us, want 1000 and 500", e.Ts, e.Dur)
			}
		}
	}
	// rank 0 compute (0,0), rank 0 communication (0,1), rank 1 compute (1,0)
	if len(x) != 3 || x[0] != 0 || x[1] != 1 || x[2] != 10 {
		t.Errorf("pid*10+tid of the events = %v, want [0 1 10]", x)
	}
}
