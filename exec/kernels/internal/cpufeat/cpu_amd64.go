//go:build amd64 && !purego

package cpufeat

// cpuid executes CPUID with the given leaf (eax) and sub-leaf (ecx).
//
//go:noescape
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 reads extended control register XCR0.
//
//go:noescape
func xgetbv0() (eax, edx uint32)

// hasAVX2FMA reports whether the CPU and the OS support AVX2 and FMA3 (Intel SDM vol. 2A, CPUID
// leaf 1 ECX bits 12 FMA, 27 OSXSAVE, 28 AVX; leaf 7 EBX bit 5 AVX2; XCR0 bits 1-2 for the OS
// saving xmm and ymm state).
func hasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv0(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// hasAVX512F reports whether the CPU and the OS support AVX-512 Foundation on top of AVX2 and FMA
// (Intel SDM vol. 2A, CPUID leaf 7 EBX bit 16 AVX512F; vol. 1 section 13.3, XCR0 bits 5-7 for the
// OS saving the opmask registers and the upper zmm state).
func hasAVX512F() bool {
	if !hasAVX2FMA() {
		return false
	}
	if xcr0, _ := xgetbv0(); xcr0&0xE6 != 0xE6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0
}

// cacheInfo reads the associativity and size in bytes of the cache of the given level and type
// (1 data, 3 unified) from CPUID's deterministic cache parameters: leaf 4 on Intel, leaf
// 0x8000001D on AMD (where leaf 0x80000001 ECX bit 22, topology extensions, says it exists).
// Each sub-leaf describes one cache: EAX bits 4:0 its type (0: no more caches), bits 7:5 its
// level; EBX bits 31:22 its ways, 21:12 its physical line partitions and 11:0 its line size, and
// ECX its sets, each minus one (Intel SDM vol. 2A, CPUID leaf 04H; AMD APM vol. 3, CPUID
// Fn8000_001D). Zeros where CPUID does not say.
func cacheInfo(level, typ uint32) (ways, bytes int) {
	maxLeaf, ebx0, ecx0, edx0 := cpuid(0, 0)
	leaf := uint32(4)
	if ebx0 == 0x68747541 && edx0 == 0x69746e65 && ecx0 == 0x444d4163 { // "AuthenticAMD"
		maxExt, _, _, _ := cpuid(0x80000000, 0)
		if maxExt < 0x8000001D {
			return 0, 0
		}
		if _, _, ecx, _ := cpuid(0x80000001, 0); ecx&(1<<22) == 0 {
			return 0, 0
		}
		leaf = 0x8000001D
	} else if maxLeaf < 4 {
		return 0, 0
	}
	for sub := uint32(0); sub < 16; sub++ {
		eax, ebx, ecx, _ := cpuid(leaf, sub)
		t, l := eax&0x1f, (eax>>5)&7
		if t == 0 {
			break
		}
		if l == level && t == typ {
			ways = int(ebx>>22) + 1
			return ways, ways * (int(ebx>>12&0x3ff) + 1) * (int(ebx&0xfff) + 1) * (int(ecx) + 1)
		}
	}
	return 0, 0
}

func l1dWays() int {
	ways, _ := cacheInfo(1, 1)
	return ways
}

func l2Bytes() int {
	_, bytes := cacheInfo(2, 3)
	return bytes
}
