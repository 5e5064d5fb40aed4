package flame

import "math/rand/v2"

// sampleIndex finds a sample by its key: an open-addressing table of
// indexes into Builder.samples, probed linearly from a multiplicative hash
// of the key's words. Go's map hashed the 40-byte key with aeshash and
// compared it with memeq, a fifth of flame's time at one lookup a call;
// samples are never removed, so the table needs no tombstones.
type sampleIndex struct {
	slots []int32 // index+1 into the samples, 0: empty; a power of two long
}

// sampleSeed is mixed into every key's hash, so that a hostile trace
// cannot choose sites whose probes all collide; the samples' order does not
// depend on it.
var sampleSeed = rand.Uint64()

// hash mixes the key's fields, word by word.
func (k *sampleKey) hash() uint64 {
	const m1, m2, m3, m4, m5 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9, 0xd6e8feb86659fd93, 0xff51afd7ed558ccd
	h := (k.size^sampleSeed)*m1 ^
		(uint64(k.thread)|uint64(k.loose)<<32)*m2 ^
		(uint64(k.stack)|uint64(k.caller)<<32)*m3 ^
		(uint64(uint32(k.dev))|uint64(uint32(k.result))<<32)*m4 ^
		(uint64(k.api)|uint64(k.object)<<16|uint64(k.state)<<24|uint64(k.name)<<32)*m5
	h ^= h >> 32
	h *= m1
	return h ^ h>>29
}

// equal is k == *o, field by field (== on the struct called memequal).
func (k *sampleKey) equal(o *sampleKey) bool {
	return k.size == o.size && k.thread == o.thread && k.loose == o.loose && k.stack == o.stack &&
		k.caller == o.caller && k.dev == o.dev && k.result == o.result && k.api == o.api &&
		k.object == o.object && k.state == o.state && k.name == o.name
}

// find returns the index of k's sample among samples, or -1 and the slot
// to insert it at.
func (x *sampleIndex) find(k *sampleKey, samples []sample) (int, int) {
	if len(x.slots) == 0 {
		return -1, -1
	}
	mask := len(x.slots) - 1
	for i := int(k.hash()) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1, i
		}
		if samples[s-1].key.equal(k) {
			return int(s - 1), i
		}
	}
}

// insert records the sample just appended to samples at slot (find's
// answer for its key), growing the table to keep it at most half full.
func (x *sampleIndex) insert(slot int, samples []sample) {
	n := len(samples) - 1
	if slot < 0 || 2*len(samples) > len(x.slots) {
		x.grow(samples)
		return
	}
	x.slots[slot] = int32(n + 1)
}

// grow doubles the table (64 slots at first) and places every sample again.
func (x *sampleIndex) grow(samples []sample) {
	size := max(64, 2*len(x.slots))
	for 2*len(samples) > size {
		size *= 2
	}
	x.slots = make([]int32, size)
	mask := size - 1
	for n := range samples {
		i := int(samples[n].key.hash()) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(n + 1)
	}
}
