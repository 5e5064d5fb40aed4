package handoff

import "testing"

// The consumer sees every buffer handed over, in order, the last one sent
// too, and Close returns only once it has; the buffers are the set's, reused, never more.
func TestHandsOverInOrderWithAFixedSet(t *testing.T) {
	type buf struct{ vals []int }
	var got []int
	seen := map[*buf]bool{}
	spares := []*buf{{}, {}}
	p := Start(spares, func(b *buf) *buf {
		seen[b] = true
		got = append(got, b.vals...)
		b.vals = b.vals[:0]
		return b
	})
	cur := &buf{}
	const n = 10_000
	for i := range n {
		cur.vals = append(cur.vals, i)
		if len(cur.vals) == 7 {
			cur = p.Hand(cur)
			if len(cur.vals) != 0 {
				t.Fatalf("Hand returned a buffer holding %v", cur.vals)
			}
		}
	}
	p.Send(cur)
	p.Close()
	if len(got) != n {
		t.Fatalf("the consumer saw %d values, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("value %d is %d: out of order", i, v)
		}
	}
	if len(seen) > len(spares)+1 {
		t.Errorf("%d buffers went through, the set has %d", len(seen), len(spares)+1)
	}
}
