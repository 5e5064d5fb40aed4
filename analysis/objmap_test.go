package analysis

import (
	"math/rand/v2"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestObjMapMatchesMap applies random sets, gets and deletes over a few
// processes, kinds (with their own maps and beyond) and handles to an
// objMap and to a map[objectKey]int and checks that every answer and the
// entry count agree: the last answer kept per kind never goes stale.
func TestObjMapMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m objMap[int]
	ref := map[objectKey]int{}
	key := func() objectKey {
		return objectKey{pid: uint32(r.IntN(3)), kind: trace.Object([]int{0, 3, 31, 32, 200}[r.IntN(5)]), handle: uint64(r.IntN(20)) << uint(r.IntN(2)*40)}
	}
	for i := 0; i < 20000; i++ {
		k := key()
		switch r.IntN(3) {
		case 0:
			m.set(k, i)
			ref[k] = i
		case 1:
			m.del(k)
			delete(ref, k)
		}
		for _, q := range []objectKey{k, key()} {
			v, ok := m.get(q)
			rv, rok := ref[q]
			if v != rv || ok != rok {
				t.Fatalf("op %d: get(%+v) = %d, %v; the map has %d, %v", i, q, v, ok, rv, rok)
			}
		}
		if m.n != len(ref) {
			t.Fatalf("op %d: %d entries, the map has %d", i, m.n, len(ref))
		}
	}
	for k, rv := range ref {
		if v, ok := m.get(k); !ok || v != rv {
			t.Fatalf("get(%+v) = %d, %v at the end; the map has %d", k, v, ok, rv)
		}
	}
}

// TestHandleTableMatchesMap applies random sets and deletes of up to a few
// thousand handles (aligned addresses, small numbers and 0, so that probes
// collide and wrap) to a handleTable and to a map: every answer and the
// count agree, across growth and the deletes' backward shifts.
func TestHandleTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h handleTable[int]
	ref := map[uint64]int{}
	handle := func() uint64 {
		switch r.IntN(3) {
		case 0:
			return uint64(r.IntN(4000))
		case 1:
			return 0x7f0000000000 + uint64(r.IntN(4000))*0x1000
		}
		return uint64(r.IntN(64)) << 58
	}
	for i := 0; i < 200000; i++ {
		k := handle()
		if r.IntN(2) == 0 {
			_, had := ref[k]
			if added := h.set(k, i); added == had {
				t.Fatalf("op %d: set(%#x) added=%v, the map had it: %v", i, k, added, had)
			}
			ref[k] = i
		} else {
			_, had := ref[k]
			if was := h.del(k); was != had {
				t.Fatalf("op %d: del(%#x) = %v, the map had it: %v", i, k, was, had)
			}
			delete(ref, k)
		}
		q := handle()
		v, ok := h.get(q)
		if rv, rok := ref[q]; v != rv || ok != rok {
			t.Fatalf("op %d: get(%#x) = %d, %v; the map has %d, %v", i, q, v, ok, rv, rok)
		}
		if n := h.n + map[bool]int{true: 1}[h.zero]; n != len(ref) {
			t.Fatalf("op %d: %d entries, the map has %d", i, n, len(ref))
		}
	}
	for k, rv := range ref {
		if v, ok := h.get(k); !ok || v != rv {
			t.Fatalf("get(%#x) = %d, %v at the end; the map has %d", k, v, ok, rv)
		}
	}
}

// BenchmarkHandleChurn creates, looks up and destroys handles as a loop
// of stream and allocation calls does (8 streams, 16 allocations taking
// turns, a few lookups each), in a handleTable and in the Go map it
// replaced: ns per operation.
func BenchmarkHandleChurn(b *testing.B) {
	ops := func(set func(uint64, int32), get func(uint64) (int32, bool), del func(uint64)) {
		for i := range 1 << 16 {
			s, a := uint64(0x10+i%8), uint64(0x7000000+(i%16)*0x1000)
			set(s, int32(i))
			set(a, int32(i))
			get(s)
			get(a)
			get(s)
			del(a)
			get(s)
			del(s)
		}
	}
	const perRound = 8 << 16
	b.Run("handleTable", func(b *testing.B) {
		var t handleTable[int32]
		for b.Loop() {
			ops(func(h uint64, v int32) { t.set(h, v) }, t.get, func(h uint64) { t.del(h) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perRound, "ns/map-op")
	})
	b.Run("map", func(b *testing.B) {
		m := map[uint64]int32{}
		for b.Loop() {
			ops(func(h uint64, v int32) { m[h] = v }, func(h uint64) (int32, bool) { v, ok := m[h]; return v, ok },
				func(h uint64) { delete(m, h) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perRound, "ns/map-op")
	})
}

// TestObjMapLastHitEdges: the zero key is absent from an empty map (the
// zero last hit answers for it) and present once set; a kind past
// kindSlots, whose slot it shares, is answered from its own map, before
// and after the slot's own kind is remembered; a deleted key is absent.
func TestObjMapLastHitEdges(t *testing.T) {
	var m objMap[int]
	zero := objectKey{}
	if v, ok := m.get(zero); ok || v != 0 {
		t.Fatalf("empty map: get(zero key) = %d, %v", v, ok)
	}
	m.set(zero, 7)
	if v, ok := m.get(zero); !ok || v != 7 {
		t.Fatalf("get(zero key) = %d, %v after set 7", v, ok)
	}
	far := objectKey{kind: kindSlots} // shares slot 0 with the zero key
	if v, ok := m.get(far); ok || v != 0 {
		t.Fatalf("get(kind %d) = %d, %v before any set of it", kindSlots, v, ok)
	}
	m.set(far, 9)
	for range 2 {
		if v, ok := m.get(far); !ok || v != 9 {
			t.Fatalf("get(kind %d) = %d, %v after set 9", kindSlots, v, ok)
		}
		if v, ok := m.get(zero); !ok || v != 7 {
			t.Fatalf("get(zero key) = %d, %v beside kind %d", v, ok, kindSlots)
		}
	}
	m.del(zero)
	if v, ok := m.get(zero); ok || v != 0 {
		t.Fatalf("get(zero key) = %d, %v after del", v, ok)
	}
	if m.n != 1 {
		t.Fatalf("%d entries, want 1", m.n)
	}
}
