package costmodel

import (
	"math"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Collectives as NCCL prices them. NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime, at 01afd20a77b5804e0ecf1042509dd9d20ebf9e93) gives
// every (algorithm, protocol) pair a latency and a bandwidth and runs a call with the pair of
// least time = latency + bytes / bandwidth; "Demystifying NCCL" (Hu et al. 2025, arXiv:2507.04786,
// §4-5) describes the same protocols as they run: LL (8-byte stores of 4 data bytes and a flag,
// lowest latency, a quarter of the bandwidth), LL128 (128-byte lines with 120 data bytes, over
// NVLink) and Simple (full bandwidth, a fence per chunk), and ring against tree for all-reduce.
// tpsim follows that model with its own bandwidths: each level's line rate times its measured
// large-message efficiency (the preset's nccl-tests bus bandwidth), which is Simple's.

// The protocols.
const (
	protoLL = iota
	protoLL128
	protoSimple
	nProtos
)

// ProtocolNames are the protocols by index, for reports and tests.
var ProtocolNames = [nProtos]string{"LL", "LL128", "Simple"}

// ncclBaseLat is the per-call latency in microseconds by algorithm (tree, ring) and protocol
// (tuning.cc baseLat).
var ncclBaseLat = [2][nProtos]float64{{4.4, 4.4, 0}, {3.6, 10.0, 8.4}}

// ncclHWLat is the latency per step in microseconds by link class (NVLink, PCI, network),
// algorithm (tree, ring) and protocol (tuning.cc hwLat).
var ncclHWLat = [3][2][nProtos]float64{
	{{.52, 1.2, 28}, {.47, 1.9, 3.4}},
	{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
	{{5.0, 8.5, 50}, {2.7, 4.0, 9.6}},
}

// ncclTreeCorrection is tuning.cc's treeCorrectionFactor: the tree's bandwidth at medium sizes
// by protocol and log2(bytes/64), 64 B to 128 MB; 1 beyond.
var ncclTreeCorrection = [nProtos][22]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
}

const (
	algoTree = 0
	algoRing = 1
	hwNVLink = 0
	hwPCI    = 1
	hwNet    = 2
)

// linkClass is the NCCL link class of a level by its name: "nvlink" is NVLink, "pcie" PCI,
// "ib", "roce", "net", "ethernet" and "opa" the network; -1 for anything else (the host
// profile's goroutine ranks), which is priced as a plain ring with the level's own latency.
func linkClass(l hardware.Level) int {
	switch l.Name {
	case "nvlink", "nvswitch", "xgmi":
		return hwNVLink
	case "pcie", "pci":
		return hwPCI
	case "ib", "roce", "net", "ethernet", "opa", "efa":
		return hwNet
	}
	return -1
}

// protoBW is the share of the Simple bandwidth a protocol reaches (tuning.cc): LL a quarter on a
// ring crossing nodes or for all-reduce (a third otherwise), a 3.8th on a tree; LL128 120/128
// less a little (0.92 ring, 0.915 tree across nodes, 7/9 tree inside one).
func protoBW(algo, proto int, multiNode, allReduce bool) float64 {
	switch {
	case proto == protoSimple:
		return 1
	case algo == algoRing && proto == protoLL && (multiNode || allReduce):
		return 1.0 / 4
	case algo == algoRing && proto == protoLL:
		return 1.0 / 3
	case algo == algoRing:
		return 0.92
	case proto == protoLL:
		return 1 / 3.8
	case multiNode:
		return 0.915
	}
	return 7.0 / 9
}

// ncclRing is the time of a ring collective of kind moving a full tensor of n bytes: simple is
// the Simple protocol's bandwidth time (the bytes each rank sends over each level's bus
// bandwidth, see CollectiveTime), intra and inter the ring steps inside and across nodes, and
// class the link classes inside and across. It returns the least time over the protocols and
// the protocol.
func ncclRing(kind program.OpKind, simple units.Seconds, intra, inter int, inClass, outClass int, n units.Bytes, ranks int) (units.Seconds, int) {
	best, bp := units.Seconds(math.Inf(1)), protoSimple
	multi := inter > 0
	ar := kind == program.OpAllReduce
	for p := range nProtos {
		in := ncclHWLat[inClass][algoRing][p]
		if multi && p == protoLL {
			in *= 1.8 // tuning.cc: intraLat *= 1.8 for LL across nodes
		}
		lat := ncclBaseLat[algoRing][p] + float64(intra)*in
		if multi {
			lat += float64(inter) * ncclHWLat[outClass][algoRing][p]
		}
		if p == protoSimple && multi && ar && float64(n) >= float64(ranks)/16*65536 {
			lat *= 1.9 // tuning.cc: the plateau of a multi-node Simple ring
		}
		t := units.Seconds(lat*1e-6) + simple/units.Seconds(protoBW(algoRing, p, multi, ar))
		if t < best {
			best, bp = t, p
		}
	}
	return best, bp
}

// ncclTree is NCCL's tree all-reduce across q nodes of k ranks: latency 2((k-1) intra + log2(q)
// inter) steps after the base, bandwidth 0.9 of the ring's bus bandwidth (tuning.cc: busBw*.9,
// algorithm bandwidth half of it, which is what the ring's 2(p-1)/p reaches for many ranks)
// corrected by size; simple is the ring's Simple bandwidth time for the same bytes.
func ncclTree(simple units.Seconds, k, q int, inClass, outClass int, n units.Bytes) units.Seconds {
	best := units.Seconds(math.Inf(1))
	logSize := 0
	if n >= 64 {
		logSize = int(math.Floor(math.Log2(float64(n) / 64)))
	}
	for p := range nProtos {
		in := ncclHWLat[inClass][algoTree][p]
		if p == protoLL {
			in *= 1.8 // tuning.cc: intraLat *= 1.8 for LL across nodes, tree as ring (a tree spans q > 1 nodes)
		}
		lat := ncclBaseLat[algoTree][p] + 2*(float64(k-1)*in+math.Floor(math.Log2(float64(q)))*ncclHWLat[outClass][algoTree][p])
		bw := 0.9 * protoBW(algoTree, p, true, true)
		if logSize < len(ncclTreeCorrection[p]) {
			bw *= ncclTreeCorrection[p][logSize]
		}
		if t := units.Seconds(lat*1e-6) + simple/units.Seconds(bw); t < best {
			best = t
		}
	}
	return best
}

// CollectiveProtocol is the protocol NCCL's model picks for a ring collective that CollectiveTime
// prices, "" where the levels are not GPU links (the host profile).
func CollectiveProtocol(hw *hardware.Hardware, kind program.OpKind, g, stride int, n units.Bytes) string {
	_, p := collective(hw, kind, g, stride, n)
	if p < 0 {
		return ""
	}
	return ProtocolNames[p]
}

// CollectiveTime prices a collective of a full tensor of n bytes over g ranks spaced stride
// devices apart on hw, as NCCL's tuning model does (see above): per-call base latency, per-step
// latency of the protocol and link, the protocol's share of the bus bandwidth, the fastest
// protocol for the size, and for an all-reduce across nodes the faster of ring and tree.
// All-gather and reduce-scatter are priced as themselves, all-reduce as one ring of twice the
// steps and bytes: the ring's steps and sent bytes are program.RingSteps and program.SentBytes.
func CollectiveTime(hw *hardware.Hardware, kind program.OpKind, g, stride int, n units.Bytes) units.Seconds {
	t, _ := collective(hw, kind, g, stride, n)
	return t
}

// collective is CollectiveTime and the protocol chosen (-1 for a plain ring).
func collective(hw *hardware.Hardware, kind program.OpKind, g, stride int, n units.Bytes) (units.Seconds, int) {
	if g <= 1 {
		return 0, -1
	}
	ar := kind == program.OpAllReduce
	// bw is the Simple bandwidth time of a ring of g ranks at a level: what each rank sends of
	// n (program.SentBytes: the ring's share, twice for all-reduce) at the level's bus bandwidth.
	bw := func(level, g int, n units.Bytes) units.Seconds {
		l := hw.Levels[level]
		return units.Seconds(float64(program.SentBytes(kind, g, n)) / (float64(l.Bandwidth) * l.Efficiency))
	}
	span := (g-1)*stride + 1
	level := hw.LevelFor(span)
	inner := hw.Levels[0].Size
	steps := program.RingSteps(kind, g)
	hierarchical := level > 0 && inner > 0 && stride < inner && inner%stride == 0 && g%(inner/stride) == 0
	if !hierarchical {
		l := hw.Levels[level]
		class := linkClass(l)
		if class < 0 {
			// A plain ring: steps x the level's latency plus the bytes at its bandwidth
			// (Thakur, Rabenseifner and Gropp 2005, Sec. 4).
			return units.Seconds(steps)*l.Latency + bw(level, g, n), -1
		}
		inter := 0
		if level > 0 {
			inter = steps // every step crosses nodes: one rank per node
		}
		return ncclRing(kind, bw(level, g, n), steps-inter, inter, class, class, n, g)
	}
	// k members share a node, q nodes. Bandwidth: NCCL runs one ring per NIC, each carrying
	// 1/k of the data across nodes, so the bytes move as in the hierarchical algorithm: inside the
	// node at its rate, across at each GPU's own NIC for n/k (reduce-scatter inside, all-reduce
	// across, all-gather inside; this is why nccl-tests measure about 192 GB/s of all-reduce bus
	// bandwidth per DGX-A100 node, collectives.json dgx_a100_multinode_allreduce_192). Steps: a
	// ring still has RingSteps(g) of them, RingSteps(q) across nodes (tuning.cc nsteps and
	// nInterSteps).
	k := inner / stride
	q := g / k
	simple := bw(0, k, n) + bw(level, q, n/units.Bytes(k))
	inClass, outClass := linkClass(hw.Levels[0]), linkClass(hw.Levels[level])
	if inClass < 0 || outClass < 0 {
		outer := hw.Levels[level]
		return units.Seconds(steps)*outer.Latency + simple, -1
	}
	inter := program.RingSteps(kind, q)
	t, p := ncclRing(kind, simple, steps-inter, inter, inClass, outClass, n, g)
	if ar && q > 1 {
		if tt := ncclTree(simple, k, q, inClass, outClass, n); tt < t {
			t = tt
		}
	}
	return t, p
}

// PipelineSendTime is the time of a pipeline send of n bytes (one rank's copy of the activation or
// its gradient) between neighbouring stages of st on hw, on the level that holds all stages
// (PipelineLevel), with its latency. With tensor parallelism and without sequence parallelism
// every rank of a tensor-parallel group holds the whole activation, and Megatron-LM's
// scatter/gather optimization (Narayanan et al. 2021 §4.1; on by default,
// --no-scatter-gather-tensors-in-pipeline turns it off) sends 1/t of it from each rank across the
// link and all-gathers the t pieces over the tensor-parallel group at the receiver: the link
// carries n/t per rank, the gather runs where the tensor-parallel group sits. Under sequence
// parallelism n is already the rank's 1/t.
func PipelineSendTime(hw *hardware.Hardware, st strategies.Strategy, n units.Bytes) units.Seconds {
	mesh := st.Mesh
	level := PipelineLevel(hw, mesh)
	l := hw.Levels[level]
	link := func(b units.Bytes) units.Seconds {
		return l.Latency + units.Seconds(float64(b)/(float64(l.Bandwidth)*l.Efficiency))
	}
	t := mesh.TP
	if t <= 1 || st.SP || n < units.Bytes(t) || hw.LevelFor((t-1)*mesh.Stride(strategies.DimTP)+1) >= level {
		// Nothing to scatter, or the tensor-parallel group is no closer than the link itself.
		return link(n)
	}
	return link(n/units.Bytes(t)) + CollectiveTime(hw, program.OpAllGather, t, mesh.Stride(strategies.DimTP), n)
}
