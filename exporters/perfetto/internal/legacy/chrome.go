package legacy

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

// EstimateChromeJSON returns the approximate size in bytes of t's Chrome
// JSON (within a few percent): it analyses t and adds up what each record
// of the timeline will take. To warn and then write without analysing t
// twice, use NewChromeJSON.
func EstimateChromeJSON(t *trace.Trace) int64 {
	return NewChromeJSON(t).Size()
}

// ChromeJSON is a trace's timeline ready to be written as Chrome JSON.
type ChromeJSON struct{ tl *timeline }

// NewChromeJSON analyses t (package analysis) into its timeline.
func NewChromeJSON(t *trace.Trace) *ChromeJSON {
	tl, a := analyse(t)
	return &ChromeJSON{tl.build(a)}
}

// Write writes the timeline, the bytes WriteChromeJSON writes.
func (c *ChromeJSON) Write(w io.Writer) error { return writeChromeJSON(w, c.tl) }

// Size returns the approximate size of what Write writes: each record's
// fixed text plus its names, numbers and arguments as they will be
// written.
func (c *ChromeJSON) Size() int64 {
	tl := c.tl
	num := func(v float64) int64 { return int64(len(strconv.FormatFloat(v, 'f', -1, 64))) }
	digits := func(v uint64) int64 { return int64(len(strconv.FormatUint(v, 10))) }
	// the TIDs writeChromeJSON gives tracks: thread tracks their own,
	// lanes numbers from 1e9, the rest 0
	ids := make([]int64, len(tl.tracks)) // digits of pid and tid together
	next := uint64(1_000_000_000)
	n := int64(len(`{"displayTimeUnit":"ns","traceEvents":[`) + len("\n]}\n"))
	for i := range tl.tracks {
		tr := &tl.tracks[i]
		tid := uint64(0)
		switch tr.kind {
		case trackThread:
			tid = uint64(tr.tid)
		case trackLane:
			tid = next
			next++
		}
		ids[i] = digits(uint64(tr.pid)) + digits(tid)
		if k := tr.kind; k == trackProcess || k == trackThread || k == trackLane {
			n += 60 + ids[i] + int64(len(tr.name)) // {"name":"thread_name","ph":"M","ts":0,"pid":P,"tid":T,"args":{"name":"N"}},
		}
	}
	for i := range tl.slices {
		s := &tl.slices[i]
		// {"name":"N","cat":"C","ph":"X","ts":T,"dur":D,"pid":P,"tid":T},
		n += 58 + int64(len(s.name)+len(s.cat)) + num(us(s.start)) + num(us(s.end-s.start)) + ids[s.track]
		if len(s.args) > 0 {
			n += 9 + int64(len(s.args)) // ,"args":{ } and the commas between
		}
		for _, a := range s.args {
			n += 3 + int64(len(a.key))
			if a.isNo {
				n += int64(len(strconv.FormatInt(a.num, 10)))
			} else {
				n += 2 + int64(len(a.str))
			}
		}
		if s.flowOut != 0 {
			n += 72 + num(us(s.start)) + ids[s.track] + int64(len(strconv.FormatUint(s.flowOut, 16)))
		}
		if s.flowIn != 0 {
			n += 81 + num(us(s.start)) + ids[s.track] + int64(len(strconv.FormatUint(s.flowIn, 16)))
		}
	}
	for _, in := range tl.instants {
		n += 50 + int64(len(in.name)) + num(us(in.t)) + ids[in.track]
	}
	for _, s := range tl.samples {
		n += 60 + int64(len(tl.tracks[s.track].name)) + num(us(s.t)) + digits(uint64(tl.tracks[s.track].pid)) +
			int64(len(strconv.FormatInt(s.value, 10)))
	}
	return n
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
	return writeChromeJSON(w, tlc.build(a))
}

func writeChromeJSON(w io.Writer, tl *timeline) error {
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
