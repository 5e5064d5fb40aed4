package analysis_test

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/trace"
)

// update is the internal test package's -update flag.
var update = golden.Lookup("update")

// replayDigest is a digest of everything a replay of t hands its consumers:
// each resolved event, each range, frame and object as its end is
// reported, then the analysis' objects, problems, ranges, paths and
// tallies, with and without Forget.
func replayDigest(t *trace.Trace) string {
	h := sha256.New()
	for _, forget := range []bool{false, true} {
		fmt.Fprintf(h, "forget=%v\n", forget)
		opts := []analysis.Option{
			analysis.OnEvent(func(e *analysis.Event) {
				fmt.Fprintf(h, "event %d %+v dev=%d ctx=%#x dur=%d err=%v obj=%d aux=%d ended=%v range=%d path=%d frame=%d scope=%d outer=%d outside=%v created=%v\n",
					e.Index, *e.Event, e.Device, e.Context, e.Duration, e.Error, e.Object, e.AuxObject, e.Ended, e.Range, e.Path,
					e.Frame, e.Scope, e.Outer, e.Outside, e.Created())
			}),
			analysis.OnRangeEnd(func(r *analysis.Range) { fmt.Fprintf(h, "range %+v\n", *r) }),
			analysis.OnFrameEnd(func(f *analysis.Frame) { fmt.Fprintf(h, "frame %+v\n", *f) }),
			analysis.OnObjectEnd(func(o *analysis.Object) { fmt.Fprintf(h, "object %+v\n", *o) }),
		}
		if forget {
			opts = append(opts, analysis.Forget())
		}
		a := analysis.Of(t, opts...)
		digestAnalysis(h, a)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func digestAnalysis(h hash.Hash, a *analysis.Analysis) {
	for _, o := range a.Objects {
		fmt.Fprintf(h, "o %+v\n", o)
	}
	for _, p := range a.Problems {
		fmt.Fprintf(h, "p %+v\n", p)
	}
	for _, p := range a.RangeProblems {
		fmt.Fprintf(h, "rp %+v\n", p)
	}
	for _, r := range a.Ranges {
		fmt.Fprintf(h, "r %+v %s\n", r, a.PathString(r.Path))
	}
	for _, c := range a.BytesInUse() {
		fmt.Fprintf(h, "b %+v\n", c)
	}
	fmt.Fprintf(h, "n %d %d %d %d %d\n", a.Events, a.Calls, a.OutsideCalls, a.First, a.Last)
}

// TestReplayUnchanged pins what the replay hands its consumers over every
// fixture trace of the repository and generated ones (the cross-consumer
// test's set): a change to the tracker's hot path must leave the digest of
// each as it was (testdata/replay.golden.txt, -update to rewrite it when
// the analysis' meaning changes on purpose).
func TestReplayUnchanged(t *testing.T) {
	fs := fixtures(t)
	var b strings.Builder
	for _, fx := range fs {
		fmt.Fprintf(&b, "%s %s\n", strings.TrimPrefix(fx.name, "../"), replayDigest(fx.build(t)))
	}
	update.Check(t, filepath.Join("testdata", "replay.golden.txt"), []byte(b.String()))
}
