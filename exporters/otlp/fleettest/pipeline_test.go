package fleettest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Binaries are built once per test binary, into a directory removed at
// exit (TestMain).
var bins struct {
	once                sync.Once
	dir, cuprof, fleetc string
	err                 error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

func binaries(t testing.TB) (cuprof, fleetcol string) {
	t.Helper()
	bins.once.Do(func() {
		if bins.dir, bins.err = os.MkdirTemp("", "cuprof-fleet-"); bins.err != nil {
			return
		}
		bins.cuprof, bins.fleetc = filepath.Join(bins.dir, "cuprof"), filepath.Join(bins.dir, "fleetcol")
		for _, b := range []struct{ out, pkg, dir string }{{bins.cuprof, "./cmd/cuprof", "../../.."}, {bins.fleetc, "./cmd/fleetcol", "."}} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if bins.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(bins.err)
		}
		t.Skip(bins.err)
	}
	return bins.cuprof, bins.fleetc
}

// freePort returns a port free on ip.
func freePort(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// collector is one fleetcol process.
type collector struct {
	name, addr, config string
	cmd                *exec.Cmd
	log                *bytes.Buffer
	done               chan struct{}
}

func startCollector(t testing.TB, name, addr, config string) *collector {
	t.Helper()
	_, bin := binaries(t)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &collector{name: name, addr: addr, config: path}
	c.start(t, bin)
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", name, tail(c.log.String(), 1500))
		}
	})
	return c
}

func (c *collector) start(t testing.TB, bin string) {
	t.Helper()
	c.log = &bytes.Buffer{}
	c.cmd = exec.Command(bin, "--config", c.config)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.done = make(chan struct{})
	go func() { c.cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if conn, err := net.DialTimeout("tcp", c.addr, time.Second); err == nil {
			conn.Close()
			return
		}
		select {
		case <-c.done:
			t.Fatalf("%s exited: %s", c.name, c.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 60s: %s", c.name, c.addr, c.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the collector at once, as a crash would.
func (c *collector) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.done
	}
}

// stop asks the collector to shut down (it flushes its exporters).
func (c *collector) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

const telemetry = `
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
`

// pipeline is the fleet: agents (one per host address) -> two gateways
// behind the loadbalancing exporter -> a backend with a file exporter.
type pipeline struct {
	agents   []*collector
	gateways []*collector
	backend  *collector
	out      string // the backend's file
}

// hostIP is the address of simulated host h: 127.0.0.(11+h).
func hostIP(h int) string { return "127.0.0." + strconv.Itoa(11+h) }

func startPipeline(t *testing.T, hosts int) *pipeline {
	t.Helper()
	p := &pipeline{out: filepath.Join(t.TempDir(), "backend.json")}
	b := freePort(t, "127.0.0.1")
	p.backend = startCollector(t, "backend", b, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:%s
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [file]
    traces:
      receivers: [otlp]
      exporters: [file]
`, b, p.out, telemetry))
	var gws []string
	for i := 0; i < 2; i++ {
		g := freePort(t, "127.0.0.1")
		gws = append(gws, g)
		p.gateways = append(p.gateways, startCollector(t, "gateway"+strconv.Itoa(i), g, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
processors:
  batch:
    timeout: 200ms
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
service:%s
  pipelines:
    metrics:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_grpc]
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_grpc]
`, g, b, telemetry)))
	}
	for h := 0; h < hosts; h++ {
		a := freePort(t, hostIP(h))
		p.agents = append(p.agents, startCollector(t, "agent"+strconv.Itoa(h), a, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[1]s
exporters:
  load_balancing/metrics:
    routing_key: resource%[2]s
  load_balancing/traces:
    routing_key: traceID%[2]s
service:%[3]s
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [load_balancing/metrics]
    traces:
      receivers: [otlp]
      exporters: [load_balancing/traces]
`, a, lbBody(gws), telemetry)))
	}
	return p
}

// lbBody is the load-balancing exporter's protocol and resolver: OTLP to
// every gateway, retried for long (the agent's queue holds what a gateway
// that is down did not take).
func lbBody(gateways []string) string {
	return fmt.Sprintf(`
    protocol:
      otlp:
        tls:
          insecure: true
        timeout: 2s
        retry_on_failure:
          enabled: true
          initial_interval: 100ms
          max_interval: 1s
          max_elapsed_time: 300s
        sending_queue:
          enabled: true
          queue_size: 10000
    resolver:
      static:
        hostnames: [%s]`, strings.Join(gateways, ", "))
}

// rank is one simulated rank's recording.
type rank struct {
	id, host int
	trace    string
	stderr   string
}

// runRanks records n ranks spread over the hosts (rank r on host r%hosts),
// at most par at once, each running demoArgs under cuprof record with the
// aggregates streamed to its host's agent.
func runRanks(t *testing.T, p *pipeline, n, par int, interval string, demoArgs ...string) []*rank {
	t.Helper()
	cuprof, _ := binaries(t)
	dir := t.TempDir()
	ranks := make([]*rank, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		rk := &rank{id: r, host: r % len(p.agents), trace: filepath.Join(dir, "rank"+strconv.Itoa(r)+".cuprof")}
		ranks[r] = rk
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			args := append([]string{"record", "--sim", "--otlp=http://" + p.agents[rk.host].addr, "--otlp-signals=metrics",
				"--otlp-interval=" + interval, "-o", rk.trace, "--", cuprof, "demo", "--run-example"}, demoArgs...)
			cmd := exec.CommandContext(ctx, cuprof, args...)
			cmd.Env = append(cleanEnv(), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r/len(p.agents)),
				"WORLD_SIZE="+strconv.Itoa(n), "OTEL_SERVICE_NAME=trainer", "TORCHELASTIC_RUN_ID=fleet-test")
			var se bytes.Buffer
			cmd.Stderr, cmd.Stdout = &se, nil
			if err := cmd.Run(); err != nil {
				t.Errorf("rank %d: %v\n%s", r, err, se.String())
			}
			rk.stderr = se.String()
		}()
	}
	wg.Wait()
	return ranks
}

// cleanEnv is the environment without OTEL_* and launcher variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "OTEL_"), k == "RANK", k == "LOCAL_RANK", k == "WORLD_SIZE",
			strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "OMPI_"), strings.HasPrefix(k, "PMI"):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// hist is an exponential histogram merged over data points.
type hist struct {
	scale  int32
	zero   uint64
	counts map[int32]uint64 // by bucket index at scale
	count  uint64
}

func newHist() *hist { return &hist{scale: 20, counts: map[int32]uint64{}} }

// downscale lowers h to scale s.
func (h *hist) downscale(s int32) {
	if s >= h.scale {
		return
	}
	shift := h.scale - s
	m := map[int32]uint64{}
	for i, c := range h.counts {
		m[i>>shift] += c
	}
	h.counts, h.scale = m, s
}

func (h *hist) add(dp pmetric.ExponentialHistogramDataPoint) {
	h.downscale(dp.Scale())
	shift := dp.Scale() - h.scale
	off := dp.Positive().Offset()
	for i, c := range dp.Positive().BucketCounts().AsRaw() {
		h.counts[(off+int32(i))>>shift] += c
	}
	h.zero += dp.ZeroCount()
	h.count += dp.Count()
}

// quantile is the nearest-rank quantile q at its bucket's geometric middle.
func (h *hist) quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(h.count)))
	if rank <= h.zero {
		return 0
	}
	var idx []int32
	for i := range h.counts {
		idx = append(idx, i)
	}
	sortInt32(idx)
	seen := h.zero
	base := math.Pow(2, math.Pow(2, -float64(h.scale)))
	for _, i := range idx {
		seen += h.counts[i]
		if seen >= rank {
			return math.Pow(base, float64(i)) * math.Sqrt(base)
		}
	}
	return math.NaN()
}

// relErr is the histogram's stated relative error (otlp.RelativeError).
func (h *hist) relErr() float64 { return math.Pow(2, math.Pow(2, -float64(h.scale))/2) - 1 }

func sortInt32(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// received is what the backend's file holds: call histograms per rank and
// API, and the resources' attributes per rank.
type received struct {
	calls     map[int]map[string]*hist
	resources map[int]pcommon.Map
	dropped   map[int]int64 // cuprof.export.dropped (metrics) per rank, the latest cumulative value
}

func readBackend(t testing.TB, path string) *received {
	t.Helper()
	r := &received{calls: map[int]map[string]*hist{}, resources: map[int]pcommon.Map{}, dropped: map[int]int64{}}
	f, err := os.Open(path)
	if err != nil {
		return r
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var um pmetric.JSONUnmarshaler
	for sc.Scan() {
		line := sc.Bytes()
		if !json.Valid(line) {
			continue // a line being written
		}
		md, err := um.UnmarshalMetrics(line)
		if err != nil {
			continue // a traces line
		}
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			rv, ok := rm.Resource().Attributes().Get("cuda.rank")
			if !ok {
				continue
			}
			rk := int(rv.Int())
			r.resources[rk] = rm.Resource().Attributes()
			for j := 0; j < rm.ScopeMetrics().Len(); j++ {
				ms := rm.ScopeMetrics().At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					switch m.Name() {
					case "cuda.driver.call.duration":
						dps := m.ExponentialHistogram().DataPoints()
						for d := 0; d < dps.Len(); d++ {
							dp := dps.At(d)
							api, _ := dp.Attributes().Get("cuda.api")
							if r.calls[rk] == nil {
								r.calls[rk] = map[string]*hist{}
							}
							h := r.calls[rk][api.Str()]
							if h == nil {
								h = newHist()
								r.calls[rk][api.Str()] = h
							}
							h.add(dp)
						}
					case "cuprof.export.dropped":
						dps := m.Sum().DataPoints()
						for d := 0; d < dps.Len(); d++ {
							if s, _ := dps.At(d).Attributes().Get("cuprof.signal"); s.Str() == "metrics" {
								r.dropped[rk] += dps.At(d).IntValue()
							}
						}
					}
				}
			}
		}
	}
	return r
}

func (r *received) total(rank int) uint64 {
	var n uint64
	for _, h := range r.calls[rank] {
		n += h.count
	}
	return n
}

// apiRow is a row of cuprof report --json's API table.
type apiRow struct {
	API      string `json:"api"`
	Count    int    `json:"count"`
	MedianNs int64  `json:"median_ns"`
	P99Ns    int64  `json:"p99_ns"`
}

// ownReport is the rank's trace's own report (--raw: the aggregates are of
// the durations as recorded).
func ownReport(t testing.TB, path string) map[string]apiRow {
	t.Helper()
	cuprof, _ := binaries(t)
	out, err := exec.Command(cuprof, "report", "--raw", "--format=json", path).Output()
	if err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	var rep struct {
		APIs  []apiRow `json:"apis"`
		Drops struct {
			Total uint64 `json:"total"`
		} `json:"drops"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Drops.Total != 0 {
		t.Errorf("%s: %d events dropped from the trace file", path, rep.Drops.Total)
	}
	m := map[string]apiRow{}
	for _, a := range rep.APIs {
		m[a.API] = a
	}
	return m
}

func sum(m map[string]apiRow) uint64 {
	var n uint64
	for _, a := range m {
		n += uint64(a.Count)
	}
	return n
}

// waitFor polls the backend until every rank's calls arrived as the
// expected totals (what its trace holds less what it reported lost), or
// the deadline passes; it returns the last reading.
func waitFor(t testing.TB, p *pipeline, want map[int]uint64, d time.Duration) *received {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := readBackend(t, p.out)
		ok := true
		for rk, n := range want {
			if got.total(rk) < n {
				ok = false
				break
			}
		}
		if ok || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var lostRE = regexp.MustCompile(`otlp metrics: (\d+) calls and \d+ frames aggregated, \d+ exports? sent, (\d+) failed \((\d+) calls' aggregates lost\)`)

// reported reads the rank's end-of-run line: calls aggregated and lost.
func reported(t testing.TB, rk *rank) (calls, lost uint64) {
	t.Helper()
	m := lostRE.FindStringSubmatch(rk.stderr)
	if m == nil {
		t.Fatalf("rank %d: no otlp metrics line in:\n%s", rk.id, rk.stderr)
	}
	c, _ := strconv.ParseUint(m[1], 10, 64)
	l, _ := strconv.ParseUint(m[3], 10, 64)
	return c, l
}

// clockRate bounds the relative difference between the recorder's
// provisional clock and the file's (the TSC rate measured at the start and
// over the whole run): 1e-4, where the runs here differ by about 5e-6.
const clockRate = 1e-4

// checkRanks compares, per rank and API, what the backend received with
// the rank's own trace: counts equal, medians and p99s within the
// histogram's stated relative error. With lossy set, a rank's received
// total plus what it reported lost equals its trace's.
func checkRanks(t *testing.T, p *pipeline, ranks []*rank, lossy bool) *received {
	t.Helper()
	reports := map[int]map[string]apiRow{}
	want := map[int]uint64{}
	for _, rk := range ranks {
		reports[rk.id] = ownReport(t, rk.trace)
		calls, lost := reported(t, rk)
		if calls != sum(reports[rk.id]) {
			t.Errorf("rank %d: aggregated %d calls, its trace has %d", rk.id, calls, sum(reports[rk.id]))
		}
		want[rk.id] = calls - lost
		if !lossy {
			// With the pipeline up every call must arrive. An export
			// the recorder saw fail (a reply that came too late) may
			// still have arrived: the loss reported is then too high,
			// never too low.
			want[rk.id] = calls
			if lost != 0 {
				t.Logf("rank %d reported %d calls lost with the pipeline up:\n%s", rk.id, lost, rk.stderr)
			}
		}
	}
	got := waitFor(t, p, want, 90*time.Second)
	for _, rk := range ranks {
		rep := reports[rk.id]
		if g, w := got.total(rk.id), want[rk.id]; g < w || (!lossy && g != w) {
			t.Errorf("rank %d: the backend has %d calls, want %d (trace %d)", rk.id, g, w, sum(rep))
			continue
		}
		res, ok := got.resources[rk.id]
		if !ok {
			if want[rk.id] > 0 {
				t.Errorf("rank %d: no resource received", rk.id)
			}
			continue // every export of it was lost, and counted
		}
		for k, v := range map[string]string{"service.name": "trainer", "cuda.job.id": "fleet-test"} {
			if a, _ := res.Get(k); a.AsString() != v {
				t.Errorf("rank %d: resource %s = %q, want %q", rk.id, k, a.AsString(), v)
			}
		}
		if ws, _ := res.Get("cuda.world_size"); ws.Int() != int64(len(ranks)) {
			t.Errorf("rank %d: cuda.world_size %v", rk.id, ws.AsRaw())
		}
		if lossy {
			continue
		}
		for api, row := range rep {
			h := got.calls[rk.id][api]
			if h == nil || h.count != uint64(row.Count) {
				t.Errorf("rank %d %s: received %v calls, trace %d", rk.id, api, h, row.Count)
				continue
			}
			for _, q := range []struct {
				name  string
				q     float64
				exact int64
			}{{"median", 0.5, row.MedianNs}, {"p99", 0.99, row.P99Ns}} {
				est := h.quantile(q.q) * 1e9
				if q.exact == 0 {
					if est != 0 {
						t.Errorf("rank %d %s %s: %g ns, trace 0", rk.id, api, q.name, est)
					}
					continue
				}
				// The streamed calls are on the recorder's provisional
				// clock, the file's on the clock calibrated over the
				// whole run: a call's start and end are each rounded to
				// the ns on both, and the rates differ by less than
				// clockRate, so each duration, and so each order
				// statistic, moves by at most clockSlack; the
				// histogram's error applies to the streamed value.
				exact := float64(q.exact)
				slack := 2 + clockRate*exact
				if d := math.Abs(est - exact); d > h.relErr()*(exact+slack)+slack {
					t.Errorf("rank %d %s %s: %.1f ns from the histogram, %d in the trace: %.2f%% > %.2f%% + %.1f ns (scale %d)",
						rk.id, api, q.name, est, q.exact, 100*d/exact, 100*h.relErr(), slack, h.scale)
				}
			}
		}
	}
	return got
}

// TestPipelineCountsAndQuantiles: ranks over hosts, each agent on its
// host's address, two gateways behind the loadbalancing exporter, one
// backend: every rank's calls arrive once, per API as in its trace, with
// medians and p99s within the stated error, and the resources name the
// rank, the job and the service. (bench/fleet runs 64 ranks over 4 hosts.)
func TestPipelineCountsAndQuantiles(t *testing.T) {
	ranks, hosts := 8, 2
	if n, err := strconv.Atoi(os.Getenv("FLEET_RANKS")); err == nil && n > 0 {
		ranks = n
	}
	if n, err := strconv.Atoi(os.Getenv("FLEET_HOSTS")); err == nil && n > 0 {
		hosts = n
	}
	p := startPipeline(t, hosts)
	start := time.Now()
	rs := runRanks(t, p, ranks, 2, "500ms", "-n", "5")
	t.Logf("%d ranks recorded in %v", ranks, time.Since(start).Round(time.Millisecond))
	checkRanks(t, p, rs, false)
}
