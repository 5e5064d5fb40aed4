package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/trace"
)

// Capture says which stretches of the program the shim records
// (docs/capture.md, "Capture ranges"). The zero value records everything.
type Capture struct {
	// Range is what opens and closes ranges: "" (nothing: only the window
	// decides), CaptureProfilerAPI or CaptureNVTX.
	Range string
	// NVTXName and NVTXDomain name the NVTX range of CaptureNVTX (domain ""
	// is NVTX's default domain).
	NVTXName, NVTXDomain string
	// Delay and Duration are the window, from the program's start: nothing
	// is recorded before Delay, nor after Delay+Duration (Duration 0: no end).
	Delay, Duration time.Duration
	// Count is the most ranges recorded per process (0: no limit).
	Count int
}

// The values of Capture.Range.
const (
	CaptureProfilerAPI = "profiler-api"
	CaptureNVTX        = "nvtx"
)

// On reports whether c asks for anything but recording everything.
func (c Capture) On() bool { return c.Range != "" || c.Delay > 0 || c.Duration > 0 || c.Count > 0 }

// String is c as trace.Meta.CaptureRange says it: "" for everything, else
// the range ("profiler-api", "nvtx:NAME[@DOMAIN]", "window") and the window
// and count as given (",delay=2s,duration=1s,count=3").
func (c Capture) String() string {
	if !c.On() {
		return ""
	}
	var b strings.Builder
	switch c.Range {
	case CaptureProfilerAPI:
		b.WriteString(CaptureProfilerAPI)
	case CaptureNVTX:
		b.WriteString("nvtx:" + c.NVTXName)
		if c.NVTXDomain != "" {
			b.WriteString("@" + c.NVTXDomain)
		}
	default:
		b.WriteString("window")
	}
	if c.Delay > 0 {
		b.WriteString(",delay=" + c.Delay.String())
	}
	if c.Duration > 0 {
		b.WriteString(",duration=" + c.Duration.String())
	}
	if c.Count > 0 {
		b.WriteString(",count=" + strconv.Itoa(c.Count))
	}
	return b.String()
}

// ParseCaptureRange reads --capture-range: "profiler-api", "nvtx:NAME" or
// "nvtx:NAME@DOMAIN" ("" and "none": no range). NAME may hold "@" when a
// domain follows: the last "@" separates them.
func ParseCaptureRange(s string) (Capture, error) {
	switch {
	case s == "" || s == "none":
		return Capture{}, nil
	case s == CaptureProfilerAPI || s == "cudaProfilerApi":
		return Capture{Range: CaptureProfilerAPI}, nil
	case strings.HasPrefix(s, "nvtx:"):
		spec := s[len("nvtx:"):]
		name, domain := spec, ""
		if i := strings.LastIndexByte(spec, '@'); i >= 0 {
			name, domain = spec[:i], spec[i+1:]
			if domain == "" {
				return Capture{}, fmt.Errorf("invalid --capture-range %q: nothing after @: give nvtx:NAME@DOMAIN, or nvtx:NAME for the default domain", s)
			}
		}
		if name == "" {
			return Capture{}, fmt.Errorf("invalid --capture-range %q: the NVTX range has no name: give nvtx:NAME[@DOMAIN]", s)
		}
		if len(name) > 255 || len(domain) > 255 || strings.ContainsRune(spec, 0) {
			return Capture{}, fmt.Errorf("invalid --capture-range %q: an NVTX name or domain of at most 255 bytes without NUL", s)
		}
		return Capture{Range: CaptureNVTX, NVTXName: name, NVTXDomain: domain}, nil
	}
	return Capture{}, fmt.Errorf("invalid --capture-range %q: use profiler-api or nvtx:NAME[@DOMAIN]", s)
}

// check says what is wrong with c.
func (c Capture) check() error {
	switch {
	case c.Delay < 0 || c.Duration < 0:
		return errors.New("invalid capture window: --delay and --duration cannot be negative")
	case c.Count < 0:
		return errors.New("invalid --capture-count: give 0 (no limit) or more")
	case c.Range != "" && c.Range != CaptureProfilerAPI && c.Range != CaptureNVTX:
		return fmt.Errorf("invalid capture range %q: use profiler-api or nvtx:NAME[@DOMAIN]", c.Range)
	case c.Range == CaptureNVTX && c.NVTXName == "":
		return errors.New("invalid --capture-range: the NVTX range has no name: give nvtx:NAME[@DOMAIN]")
	}
	return nil
}

// WithCapture records only inside capture ranges (the zero Capture: all).
func WithCapture(c Capture) Option { return optionFunc(func(cfg *config) { cfg.capture = c }) }

// keptAPIs is CUPROF_CAPTURE_KEEP, handed to every recorded program: the
// API ids the shim records outside capture ranges and refuses to pass
// through when the program asks (cuprof_pass_through), from the API table
// (trace.API.KeptOutsideCapture).
func keptAPIs() string {
	var ids []string
	for _, a := range trace.APIs() {
		if a.KeptOutsideCapture() {
			ids = append(ids, strconv.Itoa(int(a)))
		}
	}
	return strings.Join(ids, ",")
}

// captureEnv is the shim's side of c (capture.c), the window placed from
// now on CLOCK_MONOTONIC.
func captureEnv(c Capture) []string {
	if !c.On() {
		return nil
	}
	mode := "none"
	switch c.Range {
	case CaptureProfilerAPI:
		mode = "api"
	case CaptureNVTX:
		mode = "nvtx"
	}
	env := []string{"CUPROF_CAPTURE=" + mode}
	if c.Range == CaptureNVTX {
		env = append(env, "CUPROF_CAPTURE_NVTX="+c.NVTXName, "CUPROF_CAPTURE_NVTX_DOMAIN="+c.NVTXDomain)
	}
	if c.Delay > 0 || c.Duration > 0 {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		now := uint64(ts.Nano())
		start := now + uint64(c.Delay)
		var end uint64
		if c.Duration > 0 {
			end = start + uint64(c.Duration)
		}
		if c.Delay == 0 {
			start = 0
		}
		env = append(env, fmt.Sprintf("CUPROF_CAPTURE_WINDOW=%d %d", start, end))
	}
	if c.Count > 0 {
		env = append(env, "CUPROF_CAPTURE_COUNT="+strconv.Itoa(c.Count))
	}
	return env
}
