package seed

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMeasure(t *testing.T) {
	n := 0
	st, err := Measure("count", 3, 10, func() error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n != 13 || st.Calls != 10 || st.Min > st.P50 || st.P50 > st.P99 || st.Min > st.Mean {
		t.Errorf("n=%d stats %+v", n, st)
	}
	boom := errors.New("boom")
	if _, err := Measure("fail", 0, 5, func() error { return boom }); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "fail: ") {
		t.Errorf("error %v", err)
	}
	var b bytes.Buffer
	Header(&b)
	Row(&b, st)
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "count ") {
		t.Errorf("table:\n%s", b.String())
	}
}
