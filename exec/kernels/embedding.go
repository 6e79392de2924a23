package kernels

// Embedding looks up rows of the table w [vocab, hidden]: row i of dst [len(ids), hidden] is
// w[ids[i]] (torch.nn.Embedding).
//
// It panics if a dimension is negative, a length does not match, or an id is outside [0, vocab).
func Embedding(dst []float32, ids []int32, w []float32, vocab, hidden int) {
	checkDims("Embedding", vocab, hidden)
	checkLen("Embedding", "w", w, vocab*hidden)
	checkLen("Embedding", "dst", dst, len(ids)*hidden)
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			panicf("Embedding: ids[%d] = %d outside [0, %d)", i, id, vocab)
		}
		copy(dst[i*hidden:(i+1)*hidden], w[int(id)*hidden:(int(id)+1)*hidden])
	}
}

// EmbeddingRange is the lookup of a vocabulary-parallel shard (RowwiseParallel on an Embedding,
// Megatron-LM's VocabParallelEmbedding): w [hi-lo, hidden] holds the rows of global ids lo..hi-1.
// Row i of dst [len(ids), hidden] is w[ids[i]-lo] when lo <= ids[i] < hi and zero otherwise, so
// summing dst over the shards (an all-reduce of a Partial tensor) gives the full lookup.
// EmbeddingRange(dst, ids, w, 0, vocab, hidden) equals Embedding without the range check.
//
// It panics if a dimension is negative, lo > hi, a length does not match, or an id is negative.
func EmbeddingRange(dst []float32, ids []int32, w []float32, lo, hi, hidden int) {
	checkDims("EmbeddingRange", lo, hi, hidden)
	if lo > hi {
		panicf("EmbeddingRange: lo = %d > hi = %d", lo, hi)
	}
	checkLen("EmbeddingRange", "w", w, (hi-lo)*hidden)
	checkLen("EmbeddingRange", "dst", dst, len(ids)*hidden)
	for i, id := range ids {
		row := dst[i*hidden : (i+1)*hidden]
		switch {
		case id < 0:
			panicf("EmbeddingRange: ids[%d] = %d is negative", i, id)
		case int(id) < lo || int(id) >= hi:
			clear(row)
		default:
			l := int(id) - lo
			copy(row, w[l*hidden:(l+1)*hidden])
		}
	}
}

// EmbeddingBackward accumulates dw[ids[i]] += row i of dy [len(ids), hidden] into dw
// [vocab, hidden] (a scatter-add: repeated ids add up).
//
// It panics if a dimension is negative, a length does not match, or an id is outside [0, vocab).
func EmbeddingBackward(dw, dy []float32, ids []int32, vocab, hidden int) {
	checkDims("EmbeddingBackward", vocab, hidden)
	checkLen("EmbeddingBackward", "dw", dw, vocab*hidden)
	checkLen("EmbeddingBackward", "dy", dy, len(ids)*hidden)
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			panicf("EmbeddingBackward: ids[%d] = %d outside [0, %d)", i, id, vocab)
		}
		AddInPlace(dw[int(id)*hidden:(int(id)+1)*hidden], dy[i*hidden:(i+1)*hidden])
	}
}

// EmbeddingRangeBackward is the backward of EmbeddingRange: for ids in [lo, hi) it accumulates
// dw[ids[i]-lo] += row i of dy; other ids contribute nothing to this shard.
//
// It panics if a dimension is negative, lo > hi, a length does not match, or an id is negative.
func EmbeddingRangeBackward(dw, dy []float32, ids []int32, lo, hi, hidden int) {
	checkDims("EmbeddingRangeBackward", lo, hi, hidden)
	if lo > hi {
		panicf("EmbeddingRangeBackward: lo = %d > hi = %d", lo, hi)
	}
	checkLen("EmbeddingRangeBackward", "dw", dw, (hi-lo)*hidden)
	checkLen("EmbeddingRangeBackward", "dy", dy, len(ids)*hidden)
	for i, id := range ids {
		switch {
		case id < 0:
			panicf("EmbeddingRangeBackward: ids[%d] = %d is negative", i, id)
		case int(id) < lo || int(id) >= hi:
		default:
			l := int(id) - lo
			AddInPlace(dw[l*hidden:(l+1)*hidden], dy[i*hidden:(i+1)*hidden])
		}
	}
}
