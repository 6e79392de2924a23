package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt")

// unitCoster prices a transformer in round numbers so that timelines can be checked by hand:
// each layer's forward costs fwd seconds and its backward bwd (spread over its four Linear ops);
// everything else computes for free. A data-parallel bucket costs dp seconds, a ZeRO-3 gather
// gather seconds, a pipeline send pp seconds and a tensor-parallel collective tp seconds.
type unitCoster struct {
	fwd, bwd, dp, gather, pp, tp units.Seconds
}

func (c unitCoster) Compute(op *program.Op) units.Seconds {
	if op.Kind != program.OpLinear || !strings.HasPrefix(op.Module, "layers.") {
		return 0
	}
	if op.Phase == program.Backward && !op.Recompute {
		return c.bwd / 4
	}
	return c.fwd / 4
}

func (c unitCoster) Comm(op *program.Op) units.Seconds {
	switch {
	case op.Kind == program.OpSend:
		return c.pp
	case op.Dim == strategies.DimDP && op.Phase == program.Optimizer:
		return c.dp
	case op.Dim == strategies.DimDP:
		return c.gather
	case op.Dim == strategies.DimTP:
		return c.tp
	}
	return 0
}

func (c unitCoster) Hidden([]program.Op, int, units.Seconds) units.Seconds { return 0 }
func (c unitCoster) OverlapSlowdown() float64                              { return 0 }

// scenario is a testdata file: "key: value" lines, then "----", then the expected output.
type scenario struct {
	strategy string
	layers   int
	cost     unitCoster
	cores    int
	bucket   int64
	quantum  units.Seconds
}

func parseScenario(t *testing.T, text string) scenario {
	t.Helper()
	sc := scenario{layers: 4, quantum: 1, cost: unitCoster{fwd: 1, bwd: 2}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("scenario line %q is not key: value", line)
		}
		v = strings.TrimSpace(v)
		num := func() float64 {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			return f
		}
		switch k {
		case "strategy":
			sc.strategy = v
		case "layers":
			sc.layers = int(num())
		case "cores":
			sc.cores = int(num())
		case "bucket_bytes":
			sc.bucket = int64(num())
		case "quantum":
			sc.quantum = units.Seconds(num())
		case "cost":
			for _, kv := range strings.Fields(v) {
				a, b, _ := strings.Cut(kv, "=")
				f, err := strconv.ParseFloat(b, 64)
				if err != nil {
					t.Fatalf("cost %s: %v", kv, err)
				}
				switch a {
				case "fwd":
					sc.cost.fwd = units.Seconds(f)
				case "bwd":
					sc.cost.bwd = units.Seconds(f)
				case "dp":
					sc.cost.dp = units.Seconds(f)
				case "gather":
					sc.cost.gather = units.Seconds(f)
				case "pp":
					sc.cost.pp = units.Seconds(f)
				case "tp":
					sc.cost.tp = units.Seconds(f)
				default:
					t.Fatalf("unknown cost %q", a)
				}
			}
		default:
			t.Fatalf("unknown scenario key %q", k)
		}
	}
	return sc
}

func (sc scenario) run(t *testing.T) string {
	t.Helper()
	st, err := strategies.Parse(sc.strategy)
	if err != nil {
		t.Fatal(err)
	}
	if sc.bucket > 0 {
		st.BucketBytes = sc.bucket
	}
	m, err := model.Transformer{Hidden: 64, Layers: sc.layers, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("scenario", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := program.Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(p, sc.cost, Options{Cores: sc.cores, Spans: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	pp, mb := st.Mesh.PP, p.Microbatches
	fmt.Fprintf(&b, "step %g s: compute %g, comm exposed %g, bubble %g, optimizer %g\n",
		float64(res.Step), float64(res.Compute), float64(res.CommExposed), float64(res.Bubble), float64(res.Optimizer))
	fmt.Fprintf(&b, "bubble fraction %.4f; (p-1)/(m+p-1) = %.4f with p=%d, m=%d\n",
		float64(res.Bubble)/float64(res.Step), float64(pp-1)/float64(mb+pp-1), pp, mb)
	if err := WriteASCII(&b, res, sc.quantum); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, want, _ := strings.Cut(string(data), "----\n")
			sc := parseScenario(t, in)
			got := sc.run(t)
			if again := sc.run(t); again != got {
				t.Fatalf("two runs differ:\n%s\n%s", got, again)
			}
			if *update {
				if err := os.WriteFile(f, []byte(in+"----\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("output differs from %s (rerun with -update after checking):\ngot:\n%s\nwant:\n%s", f, got, want)
			}
		})
	}
}
