package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cuprof/cuprof/exporters/perfetto"
	"github.com/cuprof/cuprof/internal/tracetest"
)

func timeline(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := perfetto.Write(&b, tracetest.Random(3, 3000)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// packets splits a Trace into its packets' bodies.
func packets(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		_, _, n := protowire.ConsumeTag(b)
		p, m := protowire.ConsumeBytes(b[n:])
		out = append(out, p)
		b = b[n+m:]
	}
	return out
}

func join(ps [][]byte) []byte {
	var b []byte
	for _, p := range ps {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p)
	}
	return b
}

func typeOf(p []byte) uint64 {
	for len(p) > 0 {
		num, _, n := protowire.ConsumeField(p)
		if num == 11 {
			_, _, m := protowire.ConsumeTag(p)
			ev, _ := protowire.ConsumeBytes(p[m:])
			v, _ := varintField(ev, 9)
			return v
		}
		p = p[n:]
	}
	return 0
}

// TestBalancedTimeline: a timeline the writer made passes, its begins and
// ends counted, and the chunks handed to the decoder are whole packets
// that add up to the file.
func TestBalancedTimeline(t *testing.T) {
	data := timeline(t)
	var chunks [][]byte
	st, err := check(bufio.NewReader(bytes.NewReader(data)), 4096, 1, func(b []byte) (decoded, error) {
		chunks = append(chunks, append([]byte(nil), b...))
		return decoded{}, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, st)
	}
	begins := 0
	for _, p := range packets(data) {
		if typeOf(p) == 1 {
			begins++
		}
	}
	if st.begins != int64(begins) || st.ends != st.begins || st.sliceTracks == 0 || st.bytes != int64(len(data)) {
		t.Errorf("%s; want %d begins and as many ends over %d bytes", st, begins, len(data))
	}
	if len(chunks) < 2 || !bytes.Equal(bytes.Join(chunks, nil), data) {
		t.Fatalf("%d chunks, joined equal to the file: %v", len(chunks), bytes.Equal(bytes.Join(chunks, nil), data))
	}
	for i, c := range chunks {
		if len(c) > 4096 || !bytes.Equal(join(packets(c)), c) {
			t.Errorf("chunk %d (%d bytes) is not whole packets under the limit", i, len(c))
		}
	}
	// every third: the first, the fourth, ..., and the last
	var some [][]byte
	st, err = check(bufio.NewReader(bytes.NewReader(data)), 4096, 3, func(b []byte) (decoded, error) {
		some = append(some, append([]byte(nil), b...))
		return decoded{}, nil
	})
	want := [][]byte{}
	for i, c := range chunks {
		if i%3 == 0 || i == len(chunks)-1 {
			want = append(want, c)
		}
	}
	if err != nil || len(some) != len(want) || !bytes.Equal(bytes.Join(some, nil), bytes.Join(want, nil)) ||
		st.skipped != int64(len(chunks)-len(want)) {
		t.Errorf("-every 3: %d chunks decoded of %d, want %d (%v)", len(some), len(chunks), len(want), err)
	}
}

// TestUnbalancedTimeline: an end dropped, an end added, a packet cut and
// an event on a track never declared are each found.
func TestUnbalancedTimeline(t *testing.T) {
	ps := packets(timeline(t))
	var lastEnd int
	for i, p := range ps {
		if typeOf(p) == 2 {
			lastEnd = i
		}
	}
	dropped := append(append([][]byte{}, ps[:lastEnd]...), ps[lastEnd+1:]...)
	extra := append(append([][]byte{}, ps...), ps[lastEnd])
	stray := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 2)
	stray = protowire.AppendVarint(protowire.AppendTag(stray, 11, protowire.VarintType), 999999)
	undeclared := append(append([][]byte{}, ps...), protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), stray))
	full := join(ps)
	for name, tc := range map[string]struct {
		data []byte
		bad  func(*stats) bool
	}{
		"end dropped":      {join(dropped), func(s *stats) bool { return s.unbalanced == 1 }},
		"end added":        {join(extra), func(s *stats) bool { return s.stray == 1 }},
		"undeclared track": {join(undeclared), func(s *stats) bool { return s.undeclared == 1 }},
		"cut":              {full[:len(full)-3], func(*stats) bool { return true }},
	} {
		st, err := check(bufio.NewReader(bytes.NewReader(tc.data)), 1<<20, 1, nil)
		if err == nil || !tc.bad(st) {
			t.Errorf("%s: %v\n%s", name, err, st)
		}
	}
}

// TestProtoc decodes a timeline with protoc when both protoc and
// perfetto_trace.proto (PFCHECK_PROTO) are there; the schema is not in
// this tree.
func TestProtoc(t *testing.T) {
	proto := os.Getenv("PFCHECK_PROTO")
	if _, err := exec.LookPath("protoc"); err != nil || proto == "" {
		t.Skip("needs protoc and PFCHECK_PROTO=.../perfetto_trace.proto")
	}
	data := timeline(t)
	st, err := check(bufio.NewReader(bytes.NewReader(data)), 1<<16, 1, func(b []byte) (decoded, error) { return protocDecode(proto, b) })
	if err != nil || st.chunks < 2 || st.protocBytes != int64(len(data)) {
		t.Fatalf("%v\n%s", err, st)
	}
	// a field the schema lacks is found
	ps := packets(data)
	ps[len(ps)-1] = protowire.AppendVarint(protowire.AppendTag(ps[len(ps)-1], 9999, protowire.VarintType), 1)
	d, err := protocDecode(proto, join(ps))
	if err != nil || d.unknown != 1 {
		t.Errorf("unknown field: %d found, %v", d.unknown, err)
	}
}

// FuzzCheck: whatever the bytes, check answers (a summary, an error) and
// never panics.
func FuzzCheck(f *testing.F) {
	var b bytes.Buffer
	if err := perfetto.Write(&b, tracetest.Random(1, 60)); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := check(bufio.NewReader(bytes.NewReader(data)), 512, 2, func([]byte) (decoded, error) { return decoded{}, nil })
		if st == nil {
			t.Fatalf("no summary (%v)", err)
		}
		if err == nil && (st.unbalanced != 0 || st.stray != 0 || st.undeclared != 0 || st.backInTime != 0) {
			t.Fatalf("problems found but no error: %s", st)
		}
	})
}
