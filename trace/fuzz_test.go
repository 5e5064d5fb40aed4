package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
)

// FuzzReader feeds arbitrary bytes to the binary reader, with and without
// the checksum check (so mutations reach the decoders). It must never panic,
// whatever it accepts must re-encode to a file that reads back the same, and
// the streaming reader must agree with ReadBinary: the same events, or an
// error at Open or during the iteration; pipelined or not, the same events
// and error.
func FuzzReader(f *testing.F) {
	if small, err := os.ReadFile("testdata/small.txt"); err == nil {
		if tr, err := ReadText(bytes.NewReader(small)); err == nil {
			var buf bytes.Buffer
			if WriteBinary(&buf, tr) == nil {
				f.Add(buf.Bytes())
				f.Add(buf.Bytes()[:buf.Len()/2])
				damaged := bytes.Clone(buf.Bytes())
				damaged[headerLen+sectionHeaderLen+2] ^= 1 // the metadata payload
				damaged[len(damaged)/2] ^= 0x40
				f.Add(damaged)
			}
		}
	}
	f.Add([]byte(binaryMagic + "\x01\x00\x00\x00"))
	f.Add([]byte(binaryMagic + "\x02\x00\x00\x00" + sectionMarker))
	if v1, err := os.ReadFile("testdata/v1.cuprof"); err == nil {
		f.Add(v1)
	}
	if tr, err := ReadText(strings.NewReader(framesText)); err == nil {
		var buf bytes.Buffer
		if WriteBinary(&buf, tr) == nil {
			f.Add(buf.Bytes())
			// the same with its strings section damaged: the code section
			// then names lost strings
			if fr, err := frameV2(memSource(buf.Bytes()), true); err == nil {
				for _, s := range fr.secs {
					if s.kind == secStrings || s.kind == secCode {
						damaged := bytes.Clone(buf.Bytes())
						damaged[s.start] ^= 0x04
						f.Add(damaged)
					}
				}
			}
		}
	}
	// a strings section of 2-byte strings, and a section of empty records
	flood := appendSectionHeader([]byte(binaryMagic+"\x02\x00\x00\x00"), secStrings, 2+2*64)
	p := append([]byte{1, 64}, bytes.Repeat([]byte{1, 'x'}, 64)...)
	flood = binary.LittleEndian.AppendUint32(append(flood, p...), crc32.Checksum(p, castagnoli))
	f.Add(flood)
	empty := make([]byte, 64)
	records := appendSectionHeader([]byte(binaryMagic+"\x02\x00\x00\x00"), secSymbol, len(empty))
	f.Add(binary.LittleEndian.AppendUint32(append(records, empty...), crc32.Checksum(empty, castagnoli)))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, wholeErr := ReadBinary(data)
		var streamErr error
		var streamed []Event
		if sf, err := NewFile(bytes.NewReader(data), int64(len(data))); err != nil {
			streamErr = err
		} else {
			for e, err := range sf.Events() {
				if err != nil {
					streamErr = err
					break
				}
				streamed = append(streamed, *e)
			}
			// The pipelined reader: the same events, then the same error.
			piped, pipeErr := allEvents(readerWith(sf, pipeAlways))
			if !slices.Equal(piped, streamed) || fmt.Sprint(pipeErr) != fmt.Sprint(streamErr) {
				t.Fatalf("pipelined: %d events then %v; unpipelined: %d then %v", len(piped), pipeErr, len(streamed), streamErr)
			}
		}
		if (wholeErr == nil) != (streamErr == nil) {
			t.Fatalf("ReadBinary: %v; stream: %v", wholeErr, streamErr)
		}
		if wholeErr == nil && !slices.Equal(whole.Events, streamed) {
			t.Fatalf("streamed events differ from ReadBinary's")
		}
		for _, checkCRC := range []bool{true, false} {
			tr, err := readBinary(data, checkCRC)
			if err != nil {
				continue
			}
			var b1 bytes.Buffer
			if err := WriteBinary(&b1, tr); err != nil {
				t.Fatalf("re-encoding an accepted trace: %v", err)
			}
			tr2, err := ReadBinary(b1.Bytes())
			if err != nil {
				t.Fatalf("reading a re-encoded trace: %v", err)
			}
			if tr2.Loss != nil {
				t.Fatalf("re-encoded trace reads with a loss: %+v", tr2.Loss)
			}
			var b2 bytes.Buffer
			if err := WriteBinary(&b2, tr2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
				t.Fatalf("re-encoding is not stable")
			}
		}
	})
}

// FuzzReadText feeds arbitrary text to the text reader. It must never panic,
// and whatever it accepts must write back to text that reads to the same
// trace, in both the text and the binary form.
func FuzzReadText(f *testing.F) {
	if small, err := os.ReadFile("testdata/small.txt"); err == nil {
		f.Add(small)
	}
	f.Add([]byte("cuprof-text 1\ncall 1/2 t=5 end=9 api=cuCtxGetCurrent handle=0x10\n"))
	f.Add([]byte(framesText))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		text := func(tr *Trace) string {
			c := *tr
			c.Events = canonical(tr.Events)
			var buf bytes.Buffer
			if err := WriteText(&buf, &c); err != nil {
				t.Fatalf("writing an accepted trace: %v", err)
			}
			return buf.String()
		}
		out := text(tr)
		tr2, err := ReadText(bytes.NewReader([]byte(out)))
		if err != nil {
			t.Fatalf("reading written text: %v\n%s", err, out)
		}
		if out2 := text(tr2); out2 != out {
			t.Fatalf("text round trip differs:\n%s", golden.Diff(out, out2))
		}
		var bin bytes.Buffer
		if err := WriteBinary(&bin, tr); err != nil {
			t.Fatalf("binary encoding: %v", err)
		}
		tr3, err := ReadBinary(bin.Bytes())
		if err != nil {
			t.Fatalf("binary decoding: %v", err)
		}
		if out3 := text(tr3); out3 != out {
			t.Fatalf("binary round trip differs:\n%s", golden.Diff(out, out3))
		}
	})
}
