package report

import "io"

// WriteFramesText prints only r's Python wrapper frames table (what cuprof
// demo shows of a Python seed), or one line saying the trace has none.
func WriteFramesText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	if len(r.Frames) == 0 {
		ew.printf("Python wrapper frames: none (the trace has no Python frames)\n")
		return ew.err
	}
	writeFrames(ew, r.Frames)
	return ew.err
}
