package job

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// clockOf is what one trace says of its wall clock.
type clockOf struct {
	host string
	sync trace.ClockSync
	// drift is how far the wall clock moved against the monotonic one
	// between the start and end readings (ns), when both were read.
	drift int64
}

func clockFrom(s *Summary) clockOf {
	c := clockOf{host: s.Clock.Host, sync: s.Clock.Sync}
	if sy := s.Clock.Sync; sy.WallEnd != 0 && s.Clock.WallStart != 0 {
		c.drift = (sy.WallEnd - s.Clock.WallStart) - (sy.MonoEnd - s.Clock.MonoStart)
		if c.drift < 0 {
			c.drift = -c.drift
		}
	}
	return c
}

// ClockNote says how well the ranks' times can be compared across hosts:
// the traces are put on one axis by their wall clocks, each known to the
// kernel's maximum error at best.
type ClockNote struct {
	Hosts int `json:"hosts"`
	// UncertaintyNs bounds how far apart two ranks' clocks may be: the sum
	// of the two largest maximum errors (and wall-clock steps seen while
	// recording) of different hosts; -1 when a trace does not say.
	UncertaintyNs int64 `json:"uncertainty_ns"`
	// Unsynced lists hosts whose kernel said the clock was not
	// synchronised; Unknown those whose traces do not say.
	Unsynced []string `json:"unsynced"`
	Unknown  []string `json:"unknown"`
	Text     string   `json:"text"`
}

func clockNote(cs []clockOf) ClockNote {
	worst := map[string]int64{}
	unsynced, unknown := map[string]bool{}, map[string]bool{}
	for _, c := range cs {
		switch c.sync.State {
		case trace.SyncUnknown:
			unknown[c.host] = true
		case trace.SyncUnsynced:
			unsynced[c.host] = true
		}
		worst[c.host] = max(worst[c.host], c.sync.MaxErrorNs+c.drift)
	}
	n := ClockNote{Hosts: len(worst), Unsynced: keys(unsynced), Unknown: keys(unknown)}
	var errs []int64
	for _, e := range worst {
		errs = append(errs, e)
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i] > errs[j] })
	switch {
	case n.Hosts <= 1:
		n.Text = "all ranks are of one host: one clock"
		return n
	case len(unknown) > 0:
		n.UncertaintyNs = -1
		n.Text = fmt.Sprintf("the ranks of %d hosts are put on one time axis by their wall clocks; %d of them (%s) did not record how good their clock was (traces from before cuprof kept it): times across hosts cannot be related closer than those hosts' NTP error, often milliseconds, and no finer ordering is claimed",
			n.Hosts, len(unknown), strings.Join(n.Unknown, ", "))
	default:
		n.UncertaintyNs = errs[0] + errs[1]
		n.Text = fmt.Sprintf("the ranks of %d hosts are put on one time axis by their wall clocks, known to ±%s (the kernels' maximum errors): an ordering across hosts finer than that is not claimed",
			n.Hosts, quantity.Duration(float64(n.UncertaintyNs)))
	}
	if len(unsynced) > 0 {
		n.Text += fmt.Sprintf("; the kernel of %s said its clock was not synchronised", strings.Join(n.Unsynced, ", "))
	}
	return n
}

func keys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Clocks says how well the wall clocks of traces can be related, each
// trace's Meta as recorded (for a merge of several hosts: cuprof dump).
func Clocks(metas []*trace.Meta) ClockNote {
	cs := make([]clockOf, 0, len(metas))
	for _, m := range metas {
		cs = append(cs, clockFrom(&Summary{Clock: *m}))
	}
	return clockNote(cs)
}
