package fleettest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// profileStore takes profiles as Pyroscope's POST /ingest does
// (format=pprof, the profile as the multipart field "profile"), keeping
// each with its query. It is the part of a profile store the recorder
// talks to, so that the test can read back what was sent.
type profileStore struct {
	mu       sync.Mutex
	profiles []*profile.Profile
	names    []string
}

func (s *profileStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" || q.Get("format") != "pprof" || q.Get("name") == "" ||
		q.Get("from") == "" || q.Get("until") == "" {
		http.Error(w, "not an ingest of pprof", http.StatusBadRequest)
		return
	}
	f, _, err := r.FormFile("profile")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	s.mu.Lock()
	s.profiles, s.names = append(s.profiles, p), append(s.names, q.Get("name"))
	s.mu.Unlock()
}

// apiSums sums a profile's calls and time per driver API: the leaf of
// every stack that made a call.
func apiSums(p *profile.Profile) (calls, ns map[string]int64) {
	ci, ti := -1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "calls":
			ci = i
		case "time":
			ti = i
		}
	}
	calls, ns = map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		if s.Value[ci] == 0 || len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue // a range's or frame's own time
		}
		k := s.Location[0].Line[0].Function.Name
		calls[k] += s.Value[ci]
		ns[k] += s.Value[ti]
	}
	return calls, ns
}

// TestProfileMatchesFlame: a rank recorded with --otlp-signals=profiles
// posts one profile to the store, labelled with its rank and host, whose
// calls per driver API equal those of `cuprof flame` of its trace file,
// and whose time per API is the flame's plus the capture's cost the flame
// takes out (the streamed profile is of raw times: the cost is calibrated
// when the recording ends), within the clock slack of the metrics. Per
// stack they differ where a range or frame ended in a later drain than
// calls inside it (docs/attributes.md): not compared.
func TestProfileMatchesFlame(t *testing.T) {
	cuprof, _ := binaries(t)
	store := &profileStore{}
	srv := httptest.NewServer(store)
	defer srv.Close()
	metrics := &collectorStub{}
	msrv := httptest.NewServer(metrics)
	defer msrv.Close()

	dir := t.TempDir()
	tr := filepath.Join(dir, "rank3.cuprof")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cuprof, "record", "--sim", "--otlp="+msrv.URL, "--otlp-protocol=http",
		"--otlp-signals=metrics,profiles", "--profile-store="+srv.URL, "-o", tr, "--", cuprof, "demo", "--run-example", "-n", "20")
	cmd.Env = append(cleanEnv(), "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, se.String())
	}
	if !strings.Contains(se.String(), "cuprof: profile: 1 sent, 0 failed") {
		t.Errorf("no profile sent:\n%s", se.String())
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.profiles) != 1 {
		t.Fatalf("%d profiles stored", len(store.profiles))
	}
	got := store.profiles[0]
	if n := store.names[0]; !strings.Contains(n, "rank=3") || !strings.Contains(n, "host=") || !strings.Contains(n, "cuda_host_time{") {
		t.Errorf("ingest name %q", n)
	}
	for _, s := range got.Sample {
		if s.Label["rank"][0] != "3" || s.Label["local_rank"][0] != "1" || s.Label["host"][0] == "" {
			t.Fatalf("sample labels %v", s.Label)
		}
	}

	flameOut := filepath.Join(dir, "flame.pb.gz")
	if out, err := exec.Command(cuprof, "flame", "-o", flameOut, tr).CombinedOutput(); err != nil {
		t.Fatalf("flame: %v\n%s", err, out)
	}
	want := readProfile(t, flameOut)
	insideNs := reportInsideNs(t, cuprof, tr)

	gc, gt := apiSums(got)
	wc, wt := apiSums(want)
	if len(wc) < 5 {
		t.Fatalf("flame has %d APIs", len(wc))
	}
	for k, n := range wc {
		if gc[k] != n {
			t.Errorf("%s: %d calls streamed, flame %d", k, gc[k], n)
		}
		// raw time = flame time + calls x InsideNs (the flame clamps a
		// call at 0: up to InsideNs less), each call within 2 ns + 1e-4
		// of its file time (pipeline_test.go: clockRate)
		raw := float64(wt[k]) + float64(n)*insideNs
		if d := math.Abs(float64(gt[k]) - raw); d > float64(n)*(2+insideNs)+clockRate*raw {
			t.Errorf("%s: %d ns streamed, flame %d + %d calls x %.1f ns", k, gt[k], wt[k], n, insideNs)
		}
	}
	for k := range gc {
		if _, ok := wc[k]; !ok {
			t.Errorf("%s streamed, not in the flame", k)
		}
	}
}

func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	out, err := exec.Command("cat", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func reportInsideNs(t *testing.T, cuprof, tr string) float64 {
	t.Helper()
	out, err := exec.Command(cuprof, "report", "--format=json", tr).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Overhead struct {
			InsideNs   float64 `json:"inside_ns"`
			Subtracted bool    `json:"subtracted"`
		} `json:"overhead"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Overhead.Subtracted {
		return 0
	}
	return math.Round(rep.Overhead.InsideNs)
}

// collectorStub answers OTLP/HTTP metrics requests with 200.
type collectorStub struct{}

func (collectorStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-protobuf")
}
