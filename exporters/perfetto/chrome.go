package perfetto

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"strconv"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// ChromeTrace is the Chrome trace event JSON object format.
type ChromeTrace struct {
	TraceEvents     []ChromeEvent `json:"traceEvents"`
	DisplayTimeUnit string        `json:"displayTimeUnit"`
}

// ChromeEvent is one event of the Chrome trace event format: complete
// slices ("X"), counters ("C"), flow starts and ends ("s", "f"), instants
// ("i") and process and thread names ("M").
type ChromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  *float64       `json:"dur,omitempty"`
	PID  uint32         `json:"pid"`
	TID  uint64         `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// LargeJSON is the size past which Chrome JSON loads badly (about 100 MB);
// EstimateChromeJSON lets callers warn before writing.
const LargeJSON = 100 << 20

// EstimateChromeJSON returns the approximate size in bytes of t's Chrome JSON.
func EstimateChromeJSON(t *trace.Trace) int64 {
	return int64(len(t.Events)) * 300 // measured by BenchmarkWriteChromeJSON
}

func us(ns int64) float64 { return float64(ns) / 1000 }

// WriteChromeJSON writes t in the Chrome trace event JSON format, analysing
// it once (package analysis). Lanes of lifetimes and counters appear as extra
// named threads of their process. Events must be in trace.SortEvents order.
func WriteChromeJSON(w io.Writer, t *trace.Trace) error {
	tl, a := analyse(t)
	return tl.WriteChromeJSON(w, a)
}

// WriteChromeJSON writes the timeline in the Chrome trace event JSON format;
// a is the analysis whose replay fed it.
func (tlc *Timeline) WriteChromeJSON(w io.Writer, a *analysis.Analysis) error {
	tl := tlc.build(a)
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`); err != nil {
		return err
	}
	first := true
	var werr error
	emit := func(e *ChromeEvent) {
		if werr != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			werr = err
			return
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteByte('\n')
		_, werr = bw.Write(b)
	}
	// every non-process track is a "thread" of its process; thread tracks keep
	// their TID, the others get numbers past any TID
	tids := make([]uint64, len(tl.tracks))
	next := uint64(1_000_000_000)
	for i := range tl.tracks {
		tr := &tl.tracks[i]
		switch tr.kind {
		case trackProcess:
			emit(&ChromeEvent{Name: "process_name", Ph: "M", PID: tr.pid, Args: map[string]any{"name": tr.name}})
		case trackThread:
			tids[i] = uint64(tr.tid)
			emit(&ChromeEvent{Name: "thread_name", Ph: "M", PID: tr.pid, TID: tids[i], Args: map[string]any{"name": tr.name}})
		case trackLane:
			tids[i] = next
			next++
			emit(&ChromeEvent{Name: "thread_name", Ph: "M", PID: tr.pid, TID: tids[i], Args: map[string]any{"name": tr.name}})
		}
	}
	counterName := func(tr int) string { return tl.tracks[tr].name }
	order := make([]int, len(tl.slices))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return tl.slices[order[i]].start < tl.slices[order[j]].start })
	for _, i := range order {
		s := &tl.slices[i]
		tr := &tl.tracks[s.track]
		d := us(s.end - s.start)
		e := ChromeEvent{Name: s.name, Cat: s.cat, Ph: "X", Ts: us(s.start), Dur: &d, PID: tr.pid, TID: tids[s.track]}
		if len(s.args) > 0 {
			e.Args = map[string]any{}
			for _, a := range s.args {
				if a.isNo {
					e.Args[a.key] = a.num
				} else {
					e.Args[a.key] = a.str
				}
			}
		}
		emit(&e)
		if s.flowOut != 0 {
			emit(&ChromeEvent{Name: "alloc-free", Cat: "flow", Ph: "s", Ts: us(s.start), PID: tr.pid, TID: tids[s.track],
				ID: strconv.FormatUint(s.flowOut, 16)})
		}
		if s.flowIn != 0 {
			emit(&ChromeEvent{Name: "alloc-free", Cat: "flow", Ph: "f", BP: "e", Ts: us(s.start), PID: tr.pid,
				TID: tids[s.track], ID: strconv.FormatUint(s.flowIn, 16)})
		}
	}
	for _, in := range tl.instants {
		tr := &tl.tracks[in.track]
		emit(&ChromeEvent{Name: in.name, Ph: "i", S: "t", Ts: us(in.t), PID: tr.pid, TID: tids[in.track]})
	}
	for _, s := range tl.samples {
		tr := &tl.tracks[s.track]
		emit(&ChromeEvent{Name: counterName(s.track), Ph: "C", Ts: us(s.t), PID: tr.pid,
			Args: map[string]any{"bytes": s.value}})
	}
	if werr != nil {
		return werr
	}
	if _, err := bw.WriteString("\n]}\n"); err != nil {
		return err
	}
	return bw.Flush()
}
