package program

import (
	"slices"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Megatron-LM's bias_dropout_add_fused_train reads the branch before its bias and the residual
// and writes the sum and the 1-byte dropout mask. By hand, for n elements of 2 bytes (bf16):
// separate kernels move bias (read, write) 4n + dropout (read, write, mask) 5n + add (read two,
// write one) 6n = 15n; the fused kernel 2n + 2n + 2n + n = 7n. The ops, their FLOPs and the
// whole backward are the same either way.
func TestFusionBiasDropoutAddBytes(t *testing.T) {
	m := dropoutGPT(t)
	for _, mesh := range []string{"dp=1", "tp=2", "tp=2,sp=on", "dp=2,zero=3", "tp=2,recompute=full"} {
		off, on := lowerSpec(t, m, mesh+",mbs=2,gbs=4,fusion=off"), lowerSpec(t, m, mesh+",mbs=2,gbs=4,fusion=on")
		// The residual branch of layer 1's MLP: its bias, dropout and add, forward ops only.
		branch := func(p *Program) (sum units.Bytes, kinds string) {
			for _, op := range p.Stages[0].Forward {
				if (op.Module == "layers.1.mlp.fc2" && op.Kind == OpBias) || op.Module == "layers.1.mlp.dropout" || (op.Module == "layers.1.mlp" && op.Kind == OpAdd) {
					sum += op.MemBytes
					kinds += string(op.Kind) + " "
				}
			}
			return sum, kinds
		}
		so, ko := branch(off)
		sn, kn := branch(on)
		n := units.Bytes(2 * 32 * 64) // mbs x seq x hidden
		if strings.Contains(mesh, "sp=on") {
			n /= 2 // the branch runs on the sequence shard
		}
		// Without tensor parallelism the Linear adds its bias itself (no bias op): 11n unfused.
		want, kinds := 11*n, "dropout add "
		if strings.Contains(mesh, "tp=") {
			want, kinds = 15*n, "bias dropout add "
		}
		if ko != kinds || kn != ko {
			t.Fatalf("%s: branch ops %q unfused, %q fused; want %q", mesh, ko, kn, kinds)
		}
		if so != want || sn != 7*n {
			t.Errorf("%s: the residual branch moves %d bytes unfused and %d fused, want %d and 7n = %d", mesh, int64(so), int64(sn), int64(want), int64(7*n))
		}
		for si := range off.Stages {
			a, b := off.Stages[si], on.Stages[si]
			if len(a.Forward) != len(b.Forward) || len(a.Backward) != len(b.Backward) {
				t.Fatalf("%s: fusion changed the op count", mesh)
			}
			for i := range a.Backward {
				if a.Backward[i].Recompute {
					continue // a recomputed forward op is fused as the forward is
				}
				if a.Backward[i].MemBytes != b.Backward[i].MemBytes || a.Backward[i].FLOPs != b.Backward[i].FLOPs {
					t.Errorf("%s: backward op %d (%s %s) moves %d bytes unfused, %d fused; the backward is the same kernels",
						mesh, i, a.Backward[i].Kind, a.Backward[i].Module, int64(a.Backward[i].MemBytes), int64(b.Backward[i].MemBytes))
				}
			}
		}
	}
}

// The backward kernels' bytes by hand, for n = mbs x seq x hidden elements of a = 2 bytes
// (backwardTraffic): a LayerNorm's gradient reads dy and x twice (weight and input gradients) and
// writes dx, 5na; GELU's reads dy and x and writes dx over the 4h-wide MLP activation, 3 x 4na;
// dropout's reads dy and the mask and writes dx, n(2a + 1); a row-parallel bias's sums dy, na.
func TestBackwardTrafficByKind(t *testing.T) {
	m := dropoutGPT(t)
	st, err := strategies.Parse("tp=2,mbs=2,gbs=2")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	const a = 2
	n := units.Bytes(2 * 32 * 64)
	want := map[string]units.Bytes{
		"norm layers.1.norm2":           5 * n * a,
		"act layers.1.mlp.act":          3 * (4 * n / 2) * a, // the MLP activation is column-sharded over tp = 2
		"dropout layers.1.mlp.dropout":  n * (2*a + 1),
		"bias layers.1.mlp.fc2":         n * a,
		"dropout layers.1.attn.dropout": n * (2*a + 1),
	}
	for _, op := range p.Stages[0].Backward {
		k := string(op.Kind) + " " + op.Module
		if w, ok := want[k]; ok {
			if op.MemBytes != w {
				t.Errorf("backward %s moves %d bytes, want %d", k, int64(op.MemBytes), int64(w))
			}
			delete(want, k)
		}
	}
	for k := range want {
		t.Errorf("no backward op %s", k)
	}
}

// lowerSpec lowers m with the strategy spec, failing the test on an error.
func lowerSpec(t *testing.T, m *model.Model, spec string) *Program {
	t.Helper()
	st, err := strategies.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dropoutGPT is the tiny GPT with dropout 0.1 after each block, so that its residual branches are
// a bias, a dropout and an add under tensor parallelism.
func dropoutGPT(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Dropout: 0.1, Batch: 8}.Build("gpt-dropout", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Under compile=on each chain of pointwise ops and norms is one kernel: it reads what it takes
// from outside the chain once and writes only what later ops read. In a Llama layer, by hand in
// tensors of one size (B: [mbs, seq, ffn]; H: [mbs, seq, hidden]):
//   - the MLP's silu and product: eager, silu reads the gate's output and writes a (2B), the
//     product reads a and the up projection's output and writes their product (3B): 5B; fused,
//     it reads the gate's and the up projection's outputs and writes the product and a, which
//     the product's backward reads: 4B;
//   - the attention block's residual add and the next norm: eager, the add reads x and the
//     projection's output and writes the sum (3H), the norm reads the sum and writes its output
//     (2H: a norm alone is priced without its per-row statistics S); fused: x and the projection's output in, the sum (the MLP's
//     residual add and the norm's backward read it), the norm's output and its statistics out:
//     4H + S.
//
// The ops, their FLOPs and the activations are the same; the step is faster.
func TestCompileFusesPointwiseChains(t *testing.T) {
	m := tinyLlama(t, 2)
	off, on := lowerSpec(t, m, "dp=1,mbs=2,gbs=2"), lowerSpec(t, m, "dp=1,mbs=2,gbs=2,compile=on")
	fwd := func(p *Program, module string, kinds ...OpKind) (sum units.Bytes, ops []Op) {
		for _, op := range p.Stages[0].Forward {
			if op.Module == module && slices.Contains(kinds, op.Kind) {
				sum += op.MemBytes
				ops = append(ops, op)
			}
		}
		return sum, ops
	}
	s := off.Stages[0]
	_, mlp := fwd(off, "layers.1.mlp", OpMul)
	B := s.Values[mlp[0].Out[0]].Bytes()
	offMLP, _ := fwd(off, "layers.1.mlp.silu", OpAct)
	offMul, _ := fwd(off, "layers.1.mlp", OpMul)
	onMLP, _ := fwd(on, "layers.1.mlp.silu", OpAct)
	onMul, _ := fwd(on, "layers.1.mlp", OpMul)
	if got := offMLP + offMul; got != 5*B {
		t.Errorf("eager silu and product move %d bytes, want 5B = %d", int64(got), int64(5*B))
	}
	if got := onMLP + onMul; got != 4*B {
		t.Errorf("compiled silu and product move %d bytes, want 4B = %d", int64(got), int64(4*B))
	}
	_, add := fwd(off, "layers.1.attn", OpAdd)
	_, norm := fwd(off, "layers.1.norm2", OpNorm)
	H, S := s.Values[add[0].Out[0]].Bytes(), s.Values[norm[0].Out[1]].Bytes()
	offAdd, _ := fwd(off, "layers.1.attn", OpAdd)
	offNorm, _ := fwd(off, "layers.1.norm2", OpNorm)
	onAdd, _ := fwd(on, "layers.1.attn", OpAdd)
	onNorm, _ := fwd(on, "layers.1.norm2", OpNorm)
	if got := offAdd + offNorm; got != 5*H {
		t.Errorf("eager residual add and norm move %d bytes, want 5H = %d", int64(got), int64(5*H))
	}
	if got := onAdd + onNorm; got != 4*H+S {
		t.Errorf("compiled residual add and norm move %d bytes, want 4H + S = %d", int64(got), int64(4*H+S))
	}
	var offBytes, onBytes units.Bytes
	for si := range off.Stages {
		a, b := off.Stages[si], on.Stages[si]
		if len(a.Forward) != len(b.Forward) || len(a.Backward) != len(b.Backward) || len(a.Values) != len(b.Values) {
			t.Fatalf("compile changed the ops or values of stage %d", si)
		}
		for _, l := range [2][2][]Op{{a.Forward, b.Forward}, {a.Backward, b.Backward}} {
			for i := range l[0] {
				if l[0][i].Kind != l[1][i].Kind || l[0][i].FLOPs != l[1][i].FLOPs {
					t.Errorf("compile changed op %d (%s %s)", i, l[0][i].Kind, l[0][i].Module)
				}
				if !fusible(l[0][i].Kind) && l[0][i].MemBytes != l[1][i].MemBytes {
					t.Errorf("compile changed the bytes of %s %s, which Inductor does not fuse", l[0][i].Kind, l[0][i].Module)
				}
				offBytes += l[0][i].MemBytes
				onBytes += l[1][i].MemBytes
			}
		}
	}
	if onBytes >= offBytes {
		t.Errorf("compile moves %d bytes a microbatch, eager %d: fusion should move less", int64(onBytes), int64(offBytes))
	}
}

// kernels=eager prices an RMSNorm and the rotary embedding as the PyTorch ops they are written in
// (torchtitan's rmsnorm, Hugging Face's Llama). By hand, for a norm over n elements of a = 2
// bytes: forward x.float() (a + 4), pow (8), mean (4), the product by rsqrt (8), type_as
// (4 + a), the product by the weight (2a): 36 bytes per element, against 2a = 4 fused; backward
// 68 (8a + 52) against 5a = 10. The rotary embedding adds 10a = 20 bytes per element of q and k
// (mbs x seq x (heads + kv heads) x head dim) to the attention op, forward and backward alike
// (the flash backward's other bytes stay twice its forward's). Nothing else changes, and under
// torch.compile the two stacks are priced alike (Inductor fuses the eager ops).
func TestEagerKernelsBytes(t *testing.T) {
	m := tinyLlama(t, 2)
	base := "dp=1,mbs=2,gbs=2,attn=flash"
	fused, eager := lowerSpec(t, m, base), lowerSpec(t, m, base+",kernels=eager")
	const a = 2
	n := units.Bytes(2 * m.Seq * m.Transformer.Hidden)
	tr := m.Transformer
	qk := units.Bytes(2 * m.Seq * (tr.Heads + tr.KVHeads) * tr.HeadDim)
	find := func(ops []Op, kind OpKind, module string) Op {
		for _, op := range ops {
			if op.Kind == kind && op.Module == module && !op.Recompute {
				return op
			}
		}
		t.Fatalf("no %s %s", kind, module)
		return Op{}
	}
	f, e := fused.Stages[0], eager.Stages[0]
	for _, c := range []struct {
		name       string
		ops        func(*Stage) []Op
		kind       OpKind
		module     string
		fused, eag units.Bytes
	}{
		{"forward norm", func(s *Stage) []Op { return s.Forward }, OpNorm, "layers.1.norm2", 2 * a * n, 36 * n},
		{"backward norm", func(s *Stage) []Op { return s.Backward }, OpNorm, "layers.1.norm2", 5 * a * n, 68 * n},
	} {
		if got := find(c.ops(f), c.kind, c.module).MemBytes; got != c.fused {
			t.Errorf("%s fused moves %d bytes, want %d", c.name, int64(got), int64(c.fused))
		}
		if got := find(c.ops(e), c.kind, c.module).MemBytes; got != c.eag {
			t.Errorf("%s eager moves %d bytes, want %d", c.name, int64(got), int64(c.eag))
		}
	}
	fa, ea := find(f.Forward, OpAttention, "layers.1.attn"), find(e.Forward, OpAttention, "layers.1.attn")
	if ea.MemBytes-fa.MemBytes != 10*a*qk {
		t.Errorf("eager rotary embedding adds %d bytes to attention's forward, want 10a(q+k) = %d", int64(ea.MemBytes-fa.MemBytes), int64(10*a*qk))
	}
	fb, eb := find(f.Backward, OpAttention, "layers.1.attn"), find(e.Backward, OpAttention, "layers.1.attn")
	if fb.MemBytes != 2*fa.MemBytes || eb.MemBytes-fb.MemBytes != 10*a*qk {
		t.Errorf("attention backward moves %d fused (forward %d) and %d eager; want twice the forward, and 10a(q+k) = %d more eager",
			int64(fb.MemBytes), int64(fa.MemBytes), int64(eb.MemBytes), int64(10*a*qk))
	}
	for _, l := range [][2][]Op{{f.Forward, e.Forward}, {f.Backward, e.Backward}} {
		if len(l[0]) != len(l[1]) {
			t.Fatal("kernels=eager changed the op count")
		}
		for i := range l[0] {
			x, y := l[0][i], l[1][i]
			if x.Kind != y.Kind || x.FLOPs != y.FLOPs || (x.Kind != OpNorm && x.Kind != OpAttention && x.MemBytes != y.MemBytes) {
				t.Errorf("kernels=eager changed %s %s", x.Kind, x.Module)
			}
		}
	}
	cf, ce := lowerSpec(t, m, base+",compile=on"), lowerSpec(t, m, base+",compile=on,kernels=eager")
	for si := range cf.Stages {
		for _, l := range [][2][]Op{{cf.Stages[si].Forward, ce.Stages[si].Forward}, {cf.Stages[si].Backward, ce.Stages[si].Backward}} {
			for i := range l[0] {
				if l[0][i].MemBytes != l[1][i].MemBytes {
					t.Errorf("under compile=on, kernels=eager changed %s %s", l[0][i].Kind, l[0][i].Module)
				}
			}
		}
	}
	// A model with learned positions has no rotary embedding; its LayerNorm is one kernel in
	// PyTorch too.
	g := dropoutGPT(t)
	gf, ge := lowerSpec(t, g, base), lowerSpec(t, g, base+",kernels=eager")
	for si := range gf.Stages {
		for i, op := range gf.Stages[si].Forward {
			if op.MemBytes != ge.Stages[si].Forward[i].MemBytes {
				t.Errorf("kernels=eager changed %s %s of a LayerNorm GPT with learned positions", op.Kind, op.Module)
			}
		}
	}
}
