package pprofui

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// testProfile is a two-stack api-view profile.
func testProfile() *profile.Profile {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name}
	}
	f1, f2, f3 := fn(1, "step"), fn(2, "cuMemAllocAsync"), fn(3, "cuStreamSynchronize")
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	l1, l2, l3 := loc(1, f1), loc(2, f2), loc(3, f3)
	return &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "time", Unit: "nanoseconds"}},
		DefaultSampleType: "time",
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l2, l1}, Value: []int64{3, 3000}},
			{Location: []*profile.Location{l3, l1}, Value: []int64{1, 500}},
		},
		Location: []*profile.Location{l1, l2, l3},
		Function: []*profile.Function{f1, f2, f3},
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

func TestServe(t *testing.T) {
	s, err := Start(testProfile(), WithName("test.cuprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/ui/flamegraph") {
		t.Errorf("URL = %q, want http://127.0.0.1:PORT/ui/flamegraph", s.URL)
	}
	base := strings.TrimSuffix(s.URL, "/ui/flamegraph")
	for _, page := range []string{"/ui/flamegraph", "/ui/top", "/"} {
		body := get(t, base+page)
		for _, api := range []string{"cuMemAllocAsync", "cuStreamSynchronize"} {
			if !strings.Contains(body, api) {
				t.Errorf("%s does not name %s", page, api)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Close = %v", err)
	}
}

func TestStartBadAddr(t *testing.T) {
	if _, err := Start(testProfile(), WithAddr("256.0.0.1:0")); err == nil {
		t.Error("Start on a bad address: no error")
	}
}

func TestProfileName(t *testing.T) {
	for in, want := range map[string]string{"/tmp/a/run.cuprof": "run.cuprof", "-http=x": "cuprof", "a b": "cuprof", "-x": "cuprof"} {
		if got := ProfileName(in); got != want {
			t.Errorf("ProfileName(%q) = %q, want %q", in, got, want)
		}
	}
}
