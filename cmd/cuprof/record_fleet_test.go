package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestParseSignals: the flag's list, and without it the OpenTelemetry
// variables; a signal whose variable is none is left out with a note; an
// unknown signal is a usage error naming the known ones.
func TestParseSignals(t *testing.T) {
	for _, tc := range []struct {
		flag, traces, metrics string
		want                  []string
		note                  string
	}{
		{"", "", "", []string{"spans"}, ""},
		{"", "none", "otlp", []string{"metrics"}, "OTEL_TRACES_EXPORTER=none"},
		{"", "otlp", "otlp", []string{"metrics", "spans"}, ""},
		{"metrics,tail", "", "", []string{"metrics", "tail"}, ""},
		{" Metrics , profiles ", "", "", []string{"metrics", "profiles"}, ""},
		{"metrics,tail", "none", "", []string{"metrics"}, "no tail are sent"},
		{"metrics,spans", "", "none", []string{"spans"}, "OTEL_METRICS_EXPORTER=none"},
	} {
		t.Setenv("OTEL_TRACES_EXPORTER", tc.traces)
		t.Setenv("OTEL_METRICS_EXPORTER", tc.metrics)
		var note bytes.Buffer
		set, err := parseSignals(tc.flag, &note)
		if err != nil {
			t.Fatalf("%q: %v", tc.flag, err)
		}
		var got []string
		for _, s := range allSignals {
			if set[s] {
				got = append(got, s)
			}
		}
		want := strings.Join(tc.want, ",")
		// allSignals' order: spans, metrics, tail, profiles
		if g := strings.Join(got, ","); !sameSet(g, want) {
			t.Errorf("%q (traces %q, metrics %q): %s, want %s", tc.flag, tc.traces, tc.metrics, g, want)
		}
		if !strings.Contains(note.String(), tc.note) || (tc.note == "" && note.Len() > 0) {
			t.Errorf("%q: note %q, want %q", tc.flag, note.String(), tc.note)
		}
	}
	if _, err := parseSignals("metrics,logs", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `unknown signal "logs"`) ||
		!strings.Contains(err.Error(), "spans, metrics, tail, profiles") {
		t.Errorf("unknown signal: %v", err)
	}
}

func sameSet(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	m := map[string]bool{}
	for _, s := range as {
		m[s] = true
	}
	for _, s := range bs {
		if !m[s] {
			return false
		}
	}
	return true
}

// TestStartFleetRefusals: flags that cannot work are refused before
// anything runs, each naming the fix.
func TestStartFleetRefusals(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	g := &globalOptions{info: &bytes.Buffer{}}
	for _, tc := range []struct {
		endpoint string
		fo       fleetOptions
		want     string
	}{
		{"", fleetOptions{signals: "metrics"}, "need --otlp"},
		{"http://127.0.0.1:1", fleetOptions{signals: "metrics,profiles"}, "needs --profile-store=URL"},
		{"http://127.0.0.1:1", fleetOptions{signals: "metrics", profileStore: "http://127.0.0.1:2"}, "add profiles to the list"},
		{"http://127.0.0.1:1", fleetOptions{signals: "metrics", interval: 10}, "give 100ms or more"},
	} {
		f, err := startFleet(context.Background(), g, tc.endpoint, "", &tc.fo, []string{"prog"})
		if f != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.fo, err, tc.want)
		}
	}
}
