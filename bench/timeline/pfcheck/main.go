// Command pfcheck checks a Perfetto protobuf timeline of any size, reading
// it as a stream: every TracePacket parses, every event is on a track
// declared before it (its own or its sequence's default track), each
// track's records never go back in time (times resolved as Perfetto does:
// a sequence's default clock, its clock snapshot, incremental clocks'
// deltas), and the
// slices of each track balance (as many ends as begins, never an end with
// nothing open). With -proto it also has protoc decode the whole file
// against Perfetto's perfetto_trace.proto, in chunks of whole packets (a
// concatenation of Trace messages is a Trace message: protoc holds the whole
// input in memory, so a file of gigabytes is cut), and fails when protoc
// fails or meets a field the schema does not have (protoc prints those as
// bare numbers).
//
//	go run ./bench/timeline/pfcheck [-proto DIR/perfetto_trace.proto] [-chunk BYTES] [-every N] FILE.pftrace
//
// protoc takes about 0.3 s of CPU per MB here; -every N has it decode the
// first chunk (every track descriptor and interned name the writer made
// early), every N-th and the last, when all of a file of gigabytes would
// take hours on a shared machine.
//
// It prints one summary line per check and exits non-zero on a problem.
// perfetto_trace.proto comes from the public Perfetto repository
// (protos/perfetto/trace/perfetto_trace.proto); it is not in this tree.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"google.golang.org/protobuf/encoding/protowire"
)

func main() {
	proto := flag.String("proto", "", "perfetto_trace.proto: also decode the file with protoc")
	chunk := flag.Int("chunk", 32<<20, "most bytes of packets protoc decodes at once")
	every := flag.Int("every", 1, "protoc decodes the first chunk, every EVERY-th and the last (1: all)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pfcheck [-proto perfetto_trace.proto] [-chunk BYTES] [-every N] FILE.pftrace")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pfcheck:", err)
		os.Exit(2)
	}
	defer f.Close()
	var dec func([]byte) (decoded, error)
	if *proto != "" {
		dec = func(b []byte) (decoded, error) { return protocDecode(*proto, b) }
	}
	st, err := check(bufio.NewReaderSize(f, 1<<20), *chunk, *every, dec)
	fmt.Print(st.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pfcheck:", err)
		os.Exit(1)
	}
}

// stats is what check found.
type stats struct {
	bytes, packets, descriptors, events       int64
	begins, ends, instants, counters          int64
	tracks, sliceTracks                       int
	chunks, protocFailed, unknownFields       int64
	skipped                                   int64 // chunks not handed to protoc
	protocBytes                               int64
	unbalanced, backInTime, undeclared, stray int64
}

func (s *stats) String() string {
	out := fmt.Sprintf("packets %d (%d bytes): %d track descriptors, %d events: %d slice begins, %d slice ends, %d instants, %d counter values\n",
		s.packets, s.bytes, s.descriptors, s.events, s.begins, s.ends, s.instants, s.counters)
	out += fmt.Sprintf("tracks %d, %d with slices: %d unbalanced, %d ends with no slice open, %d records back in time, %d events on undeclared tracks\n",
		s.tracks, s.sliceTracks, s.unbalanced, s.stray, s.backInTime, s.undeclared)
	if s.chunks > 0 {
		out += fmt.Sprintf("protoc: %d chunks (%d bytes, %.1f%% of the file) decoded as perfetto.protos.Trace, %d failed, %d fields unknown to the schema; %d chunks not decoded (-every)\n",
			s.chunks, s.protocBytes, 100*float64(s.protocBytes)/float64(max(s.bytes, 1)), s.protocFailed, s.unknownFields, s.skipped)
	}
	return out
}

type trackState struct {
	depth  int64
	last   uint64
	slices bool
}

// seqState is what a packet sequence's TracePacketDefaults and
// ClockSnapshot set: its default track and clock, and its sequence-scoped
// clocks (by id), each tied to BOOTTIME.
type seqState struct {
	track, clock uint64
	clocks       map[uint64]*seqClock
}

type seqClock struct {
	base, boot, last uint64
	incremental      bool
}

const clockBoottime = 6

// decoded is what protoc said of one chunk.
type decoded struct{ unknown int64 }

// check reads the Trace from r. It cuts it in runs of whole packets of at
// most chunk bytes and hands decode (when not nil) the first, every
// every-th and the last.
func check(r *bufio.Reader, chunk, every int, decode func([]byte) (decoded, error)) (*stats, error) {
	st := &stats{}
	tracks := map[uint64]*trackState{}
	seqs := map[uint64]*seqState{}
	var buf []byte // packets for the next chunk
	var cut int64  // chunks cut
	flush := func(last bool) error {
		if decode == nil || len(buf) == 0 {
			return nil
		}
		cut++
		if every > 1 && (cut-1)%int64(every) != 0 && !last {
			st.skipped++
			buf = buf[:0]
			return nil
		}
		d, err := decode(buf)
		st.chunks++
		st.protocBytes += int64(len(buf))
		st.unknownFields += d.unknown
		if err != nil {
			st.protocFailed++
			fmt.Fprintf(os.Stderr, "pfcheck: chunk %d: %v\n", st.chunks, err)
		}
		if st.chunks%16 == 0 {
			fmt.Fprintf(os.Stderr, "pfcheck: %d chunks (%d bytes) decoded by protoc, %d failed\n", st.chunks, st.protocBytes, st.protocFailed)
		}
		buf = buf[:0]
		return nil
	}
	var pkt []byte
	for {
		num, typ, n, err := readTag(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, fmt.Errorf("at byte %d: %w", st.bytes, err)
		}
		if num != 1 || typ != protowire.BytesType {
			return st, fmt.Errorf("at byte %d: field %d of wire type %d in Trace, want packets (field 1)", st.bytes, num, typ)
		}
		l, m, err := readUvarint(r)
		if err != nil || l > 1<<30 {
			return st, fmt.Errorf("at byte %d: bad packet length", st.bytes)
		}
		if cap(pkt) < int(l) {
			pkt = make([]byte, l)
		}
		pkt = pkt[:l]
		if _, err := io.ReadFull(r, pkt); err != nil {
			return st, fmt.Errorf("at byte %d: packet cut short: %w", st.bytes, err)
		}
		if decode != nil {
			if len(buf)+n+m+int(l) > chunk {
				if err := flush(false); err != nil {
					return st, err
				}
			}
			buf = protowire.AppendTag(buf, 1, protowire.BytesType)
			buf = protowire.AppendBytes(buf, pkt)
		}
		st.bytes += int64(n + m + int(l))
		st.packets++
		if err := st.packet(pkt, tracks, seqs); err != nil {
			return st, fmt.Errorf("packet %d: %w", st.packets, err)
		}
	}
	if err := flush(true); err != nil {
		return st, err
	}
	st.tracks = len(tracks)
	for _, t := range tracks {
		if t.slices {
			st.sliceTracks++
		}
		if t.depth != 0 {
			st.unbalanced++
		}
	}
	if st.unbalanced+st.stray+st.backInTime+st.undeclared+st.protocFailed+st.unknownFields > 0 {
		return st, errors.New("the timeline has problems (see above)")
	}
	return st, nil
}

// packet reads what the balance needs from one TracePacket.
func (st *stats) packet(b []byte, tracks map[uint64]*trackState, seqs map[uint64]*seqState) error {
	var ts, seqID, flags, clock uint64
	var event, desc, defaults, snapshot []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		_, _, tl := protowire.ConsumeTag(b)
		switch {
		case num == 8 && typ == protowire.VarintType:
			ts, _ = protowire.ConsumeVarint(b[tl:])
		case num == 10 && typ == protowire.VarintType:
			seqID, _ = protowire.ConsumeVarint(b[tl:])
		case num == 13 && typ == protowire.VarintType:
			flags, _ = protowire.ConsumeVarint(b[tl:])
		case num == 58 && typ == protowire.VarintType:
			clock, _ = protowire.ConsumeVarint(b[tl:])
		case num == 59 && typ == protowire.BytesType:
			defaults, _ = protowire.ConsumeBytes(b[tl:])
		case num == 6 && typ == protowire.BytesType:
			if snapshot, _ = protowire.ConsumeBytes(b[tl:]); snapshot == nil {
				snapshot = []byte{}
			}
		case num == 11 && typ == protowire.BytesType:
			if event, _ = protowire.ConsumeBytes(b[tl:]); event == nil {
				event = []byte{}
			}
		case num == 60 && typ == protowire.BytesType:
			if desc, _ = protowire.ConsumeBytes(b[tl:]); desc == nil {
				desc = []byte{}
			}
		}
		b = b[n:]
	}
	sq := seqs[seqID]
	if sq == nil || flags&1 != 0 { // SEQ_INCREMENTAL_STATE_CLEARED
		sq = &seqState{clocks: map[uint64]*seqClock{}}
		seqs[seqID] = sq
	}
	if defaults != nil {
		sq.clock, _ = varintField(defaults, 58)
		if ted, ok := bytesField(defaults, 11); ok {
			sq.track, _ = varintField(ted, 11)
		}
	}
	if snapshot != nil { // the trace processor reads nothing else of its packet
		return sq.snapshot(snapshot)
	}
	if clock == 0 {
		clock = sq.clock
	}
	if c := sq.clocks[clock]; c != nil {
		if c.incremental {
			c.last += ts
			ts = c.last
		}
		ts = c.boot + (ts - c.base)
	} else if clock != 0 && clock != clockBoottime {
		return fmt.Errorf("timestamp on clock %d, not in a snapshot of its sequence", clock)
	}
	if desc != nil {
		st.descriptors++
		u, ok := varintField(desc, 1)
		if !ok {
			return errors.New("track descriptor without uuid")
		}
		if tracks[u] != nil {
			return fmt.Errorf("track %d declared twice", u)
		}
		tracks[u] = &trackState{}
	}
	if event == nil {
		return nil
	}
	st.events++
	typ, _ := varintField(event, 9)
	u, ok := varintField(event, 11)
	if !ok {
		u = sq.track
	}
	t := tracks[u]
	if t == nil {
		st.undeclared++
		return nil
	}
	if ts < t.last {
		st.backInTime++
	}
	t.last = ts
	switch typ {
	case 1:
		st.begins++
		t.depth++
		t.slices = true
	case 2:
		st.ends++
		if t.depth--; t.depth < 0 {
			st.stray++
			t.depth = 0
		}
	case 3:
		st.instants++
	case 4:
		st.counters++
	}
	return nil
}

// snapshot reads a ClockSnapshot: its sequence-scoped clocks, tied to
// BOOTTIME.
func (sq *seqState) snapshot(b []byte) error {
	var clocks [][]byte
	var boot uint64
	hasBoot := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num == 1 && typ == protowire.BytesType {
			_, _, tl := protowire.ConsumeTag(b)
			c, _ := protowire.ConsumeBytes(b[tl:])
			clocks = append(clocks, c)
			if id, _ := varintField(c, 1); id == clockBoottime {
				boot, _ = varintField(c, 2)
				hasBoot = true
			}
		}
		b = b[n:]
	}
	for _, c := range clocks {
		id, _ := varintField(c, 1)
		if id == clockBoottime {
			continue
		}
		if id < 64 || id >= 128 || !hasBoot {
			return fmt.Errorf("clock %d in a snapshot: only sequence clocks tied to BOOTTIME are read", id)
		}
		base, _ := varintField(c, 2)
		incr, _ := varintField(c, 3)
		sq.clocks[id] = &seqClock{base: base, boot: boot, last: base, incremental: incr != 0}
	}
	return nil
}

func bytesField(b []byte, want protowire.Number) ([]byte, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return nil, false
		}
		if num == want && typ == protowire.BytesType {
			_, _, tl := protowire.ConsumeTag(b)
			v, _ := protowire.ConsumeBytes(b[tl:])
			return v, true
		}
		b = b[n:]
	}
	return nil, false
}

func varintField(b []byte, want protowire.Number) (uint64, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return 0, false
		}
		if num == want && typ == protowire.VarintType {
			_, _, tl := protowire.ConsumeTag(b)
			v, _ := protowire.ConsumeVarint(b[tl:])
			return v, true
		}
		b = b[n:]
	}
	return 0, false
}

func readUvarint(r *bufio.Reader) (uint64, int, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		c, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 10, errors.New("varint too long")
}

func readTag(r *bufio.Reader) (protowire.Number, protowire.Type, int, error) {
	v, n, err := readUvarint(r)
	if err != nil {
		return 0, 0, n, err
	}
	return protowire.Number(v >> 3), protowire.Type(v & 7), n, nil
}

// unknownField matches a line of protoc's text output for a field the
// schema does not have: its number in place of a name.
var unknownField = regexp.MustCompile(`^\s*[0-9]+(: | \{)`)

// protocDecode has protoc decode b as perfetto.protos.Trace and counts the
// fields it printed by number.
func protocDecode(proto string, b []byte) (decoded, error) {
	cmd := exec.Command("protoc", "--decode=perfetto.protos.Trace", "--proto_path="+filepath.Dir(proto), filepath.Base(proto))
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return decoded{}, err
	}
	if err := cmd.Start(); err != nil {
		return decoded{}, err
	}
	var d decoded
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if unknownField.Match(sc.Bytes()) {
			d.unknown++
		}
	}
	if err := cmd.Wait(); err != nil {
		return d, fmt.Errorf("protoc: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	if s := bytes.TrimSpace(stderr.Bytes()); len(s) > 0 {
		return d, fmt.Errorf("protoc: %s", s)
	}
	return d, nil
}
