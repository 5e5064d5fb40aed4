package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/trace"
)

// Profiles: the aggregates as a pprof profile, the one `cuprof flame`
// makes of the trace (package flame, api view: calls and host time by
// stack of NVTX ranges, Python wrapper frames and driver API), built by a
// flame.Builder fed as the recording drains, with the rank, local rank
// and host as labels of every sample. It is sent to a profile store's
// HTTP API, Pyroscope's POST /ingest (format=pprof), which Grafana
// Pyroscope and Alloy's pyroscope.receive_http accept: the OTLP profiles
// signal is still in development (the Collector takes it only behind the
// service.profilesSupport feature gate, the loadbalancing exporter does
// not route it, and the Go SDK has no profiles exporter), so the profile
// goes beside the Collector pipeline and never through it: the other
// signals do not depend on a collector that accepts profiles.

// ProfileStats counts the profiles sent.
type ProfileStats struct {
	Sent, Failed int64
	Samples      int // samples of the last profile made
}

type profileConfig struct {
	url     string
	headers map[string]string
}

// WithProfiles makes the aggregator send its profile to the Pyroscope
// ingest API at base (http://host:4040) when it closes.
func WithProfiles(base string) AggregateOption {
	return aggOption(func(c *aggConfig) { c.profiles = &profileConfig{url: base} })
}

type profileAgg struct {
	cfg    *profileConfig
	b      *flame.Builder
	tk     *analysis.Tracker
	tables *trace.Trace
	labels map[string]string
	name   string
	from   time.Time

	sent, failed atomic.Int64
	samples      int
}

func newProfileAgg(tables *trace.Trace, pc *profileConfig, res *resource.Resource) *profileAgg {
	b, err := flame.NewBuilder(tables)
	if err != nil { // only for a nil trace or an unknown view
		panic("otlp: " + err.Error())
	}
	p := &profileAgg{cfg: pc, b: b, tables: tables, labels: map[string]string{}, from: time.Now()}
	p.tk = analysis.NewTracker(tables, b.Options()...)
	for _, kv := range res.Attributes() {
		switch string(kv.Key) {
		case AttrRank:
			p.labels["rank"] = kv.Value.String()
		case AttrLocalRank:
			p.labels["local_rank"] = kv.Value.String()
		case AttrHostName:
			p.labels["host"] = kv.Value.String()
		case AttrJobID:
			p.labels["job"] = kv.Value.String()
		case AttrServiceName:
			p.name = kv.Value.String()
		}
	}
	return p
}

// Profile returns the profile so far (after Close: of the whole recording),
// with the labels.
func (p *profileAgg) profile() *profile.Profile {
	pr, _ := p.b.Profile(p.tk.Finish())
	for _, s := range pr.Sample {
		if s.Label == nil {
			s.Label = map[string][]string{}
		}
		for k, v := range p.labels {
			s.Label[k] = []string{v}
		}
	}
	return pr
}

// ingestName is Pyroscope's application name with the labels:
// service{rank=3,host=node1}.
func (p *profileAgg) ingestName() string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer("{", "_", "}", "_", ",", "_", "=", "_").Replace(p.name))
	b.WriteString(".cuda_host_time{")
	first := true
	for _, k := range []string{"host", "rank", "local_rank", "job"} {
		v, ok := p.labels[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.NewReplacer("{", "_", "}", "_", ",", "_", "=", "_").Replace(v))
	}
	b.WriteByte('}')
	return b.String()
}

// send posts the profile of the whole recording.
func (p *profileAgg) send(ctx context.Context) error {
	pr := p.profile()
	p.samples = len(pr.Sample)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("profile", "profile.pprof")
	if err == nil {
		err = pr.Write(fw)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		p.failed.Add(1)
		return fmt.Errorf("otlp: cannot encode the profile: %w", err)
	}
	q := url.Values{}
	q.Set("name", p.ingestName())
	q.Set("from", strconv.FormatInt(p.from.Unix(), 10))
	q.Set("until", strconv.FormatInt(time.Now().Unix()+1, 10))
	q.Set("format", "pprof")
	q.Set("spyName", "cuprof")
	u := strings.TrimRight(p.cfg.url, "/") + "/ingest?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &body)
	if err != nil {
		p.failed.Add(1)
		return fmt.Errorf("otlp: profile store %s: %w", p.cfg.url, err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	for k, v := range p.cfg.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.failed.Add(1)
		return fmt.Errorf("otlp: cannot send the profile to %s: %w", p.cfg.url, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		p.failed.Add(1)
		return fmt.Errorf("otlp: profile store %s answered %s: %s", p.cfg.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	p.sent.Add(1)
	return nil
}

func (p *profileAgg) stats() ProfileStats {
	return ProfileStats{Sent: p.sent.Load(), Failed: p.failed.Load(), Samples: p.samples}
}
