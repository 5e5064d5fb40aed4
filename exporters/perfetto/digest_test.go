package perfetto

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strconv"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// timelineDigests are the SHA-256 of timelines, and the size Writer.Size
// said after half the events, the Writer wrote before its
// bookkeeping moved between goroutines (main at f5807d1): of random traces
// (every kind of event, counters of several devices and pools, ranges,
// frames, names, marks, lifetimes on lanes) and the loop, in both formats.
var timelineDigests = map[string]string{
	"loop chrome-json":    "6b4ef47b7f94d484c55f30c57696e48baa1443e18455aea6cb93445fb02ef71e 20718005",
	"loop perfetto":       "7f4396826165954f38a3aa11e81b0d9911a655b138df1cff5f87eca3427ddc46 5761405",
	"python chrome-json":  "d1227f2bc726aafd9ad477926e11e7a2dd8928c00127140504f15ef61f54a367 2477",
	"python perfetto":     "5a70263cf85783a69b873d260d513f829879e9ea113abad0709dea38579039b8 1527",
	"random1 chrome-json": "d3a1494e2079cd00aff8a42e92436aa9a241d745ebf8da43edb0e15cb2b17729 3709153",
	"random1 perfetto":    "da4b5548883ad8cdaa8e7ca8af777c3cc80bdf4335fa0da542877bb6da89dabd 1222246",
	"random2 chrome-json": "d312ce65f78e4a759e6a9226988c962fb013745fe5e21712c2ea7a4889e8211a 3705200",
	"random2 perfetto":    "c24a0c0fece7da72a857f9d2e108a771baf40230d35b87be39169fb82e90f105 1233620",
	"random3 chrome-json": "5bebd22169383e344392ef238ad984e21ccf7f380f711ae9b32f81426fc3be46 3699186",
	"random3 perfetto":    "38eedf431a0c3c2775f50023f7bc3c5fa7ad565c34c140d5ca1ea431ce71add4 1232100",
}

// TestTimelineDigests: the timelines of these traces are byte for byte
// those written before, on one goroutine and on several: what the
// Writer does and what its renderer does, and in which order, is as it
// was.
func TestTimelineDigests(t *testing.T) {
	traces := map[string]func() *trace.Trace{
		"random1": func() *trace.Trace { return tracetest.Random(1, 30_000) },
		"random2": func() *trace.Trace { return tracetest.Random(2, 30_000) },
		"random3": func() *trace.Trace { return tracetest.Random(3, 30_000) },
		"loop":    func() *trace.Trace { return tracetest.LoopTrace(20_000) },
		"python":  tracetest.PythonTrace,
	}
	for name, mk := range traces {
		tr := mk()
		for _, format := range []string{"perfetto", "chrome-json"} {
			for _, procs := range []int{1, 2} {
				prev := runtime.GOMAXPROCS(procs)
				var out bytes.Buffer
				size, err := writeTimeline(&out, tr, format, len(tr.Events)/2)
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatalf("%s %s: %v", name, format, err)
				}
				sum := sha256.Sum256(out.Bytes())
				got, key := hex.EncodeToString(sum[:])+" "+strconv.FormatInt(size, 10), name+" "+format
				if want := timelineDigests[key]; got != want {
					t.Errorf("%s on %d goroutines: %d bytes, SHA-256 and size midway %s, want %s", key, procs, out.Len(), got, want)
				}
			}
		}
	}
}
