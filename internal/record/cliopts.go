package record

import (
	"io"

	"github.com/cuprof/cuprof/internal/output"
)

// The command line's output and message options.

// WithForce writes the output even where internal/output's rules refuse (a
// symbolic link, a block device, another user's FIFO) and replaces an
// existing file without keeping it as NAME.old.
func WithForce(force bool) Option { return optionFunc(func(c *config) { c.force = force }) }

// WithNotices sends cuprof's own notes and warnings to w instead of the
// program's standard error (io.Discard silences them: cuprof record -q).
func WithNotices(w io.Writer) Option { return optionFunc(func(c *config) { c.notices = w }) }

// note is where cuprof's own lines go.
func (c *config) note() io.Writer {
	if c == nil { // a write without a recording's options (recover, tests)
		return io.Discard
	}
	if c.notices != nil {
		return c.notices
	}
	if c.stderr == nil {
		return io.Discard
	}
	return c.stderr
}

// outputOptions are internal/output's options for the trace.
func (c *config) outputOptions() []output.Option {
	if c.claimed {
		return []output.Option{output.Force(c.force), output.Replace()}
	}
	return []output.Option{output.Force(c.force)}
}

// WithClaimedOutput says the output is an empty file this recorder made to
// claim its name (output.Claim): it is written over, not kept as NAME.old.
func WithClaimedOutput(claimed bool) Option {
	return optionFunc(func(c *config) { c.claimed = claimed })
}
