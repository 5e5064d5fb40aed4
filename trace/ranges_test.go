package trace

import (
	"strings"
	"testing"
)

func TestRanges(t *testing.T) {
	const text = `cuprof-text 1
push 1/1 t=100 name=outer
span 1/1 t=150 end=400 name=Stream.Create domain=cudawrap
call 1/1 t=200 end=300 api=cuStreamCreate handle=0x10
push 1/1 t=500 name=inner
pop 1/1 t=600
pop 1/1 t=700
pop 1/1 t=800
start 1/1 t=900 id=7 name=load
end 1/2 t=950 id=7
end 1/2 t=960 id=8
push 1/2 t=970 name=open
call 1/2 t=990 end=1000 api=cuCtxGetCurrent
`
	tr, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	ranges, problems := tr.Ranges()
	type want struct {
		name         string
		tid          uint32
		start, end   int64
		depth        int
		unterminated bool
		origin       Kind
	}
	wants := []want{
		{"outer", 1, 100, 700, 0, false, KindRangePush},
		{"Stream.Create", 1, 150, 400, 1, false, KindSpan},
		{"inner", 1, 500, 600, 1, false, KindRangePush},
		{"load", 1, 900, 950, -1, false, KindRangeStart},
		{"open", 2, 970, 1000, 0, true, KindRangePush},
	}
	if len(ranges) != len(wants) {
		t.Fatalf("got %d ranges, want %d: %+v", len(ranges), len(wants), ranges)
	}
	for i, w := range wants {
		r := ranges[i]
		got := want{tr.String(r.Name), r.TID, r.Start, r.End, r.Depth, r.Unterminated, r.Origin}
		if got != w {
			t.Errorf("range %d = %+v, want %+v", i, got, w)
		}
	}
	var reasons []string
	for _, p := range problems {
		reasons = append(reasons, tr.Events[p.Event].Kind.String()+": "+p.Reason)
	}
	wantProblems := []string{"pop: pop with no open range on its thread", "end: end of unknown range id 8"}
	if strings.Join(reasons, "|") != strings.Join(wantProblems, "|") {
		t.Errorf("problems = %q, want %q", reasons, wantProblems)
	}
}
