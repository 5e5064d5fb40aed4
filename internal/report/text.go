package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/table"
)

func dur(ns int64) string { return quantity.Duration(float64(ns)) }

func itoa(n int) string { return strconv.Itoa(n) }

// WriteText prints r as aligned, human-readable tables.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	m := r.Meta
	var head []string
	for _, kv := range [][2]string{{"host", m.Host}, {"capture", m.Capture}, {"cuprof", m.CuprofVersion}} {
		if kv[1] != "" {
			head = append(head, kv[0]+" "+kv[1])
		}
	}
	if m.DriverVersion != 0 {
		head = append(head, "driver "+strconv.Itoa(int(m.DriverVersion)))
	}
	ew.printf("cuprof report")
	if len(head) > 0 {
		ew.printf(": %s", strings.Join(head, ", "))
	}
	ew.printf("\n")
	if len(m.Command) > 0 {
		ew.printf("command: %s\n", strings.Join(m.Command, " "))
	}
	for _, g := range m.GPUs {
		ew.printf("gpu %d: %s", g.Ordinal, g.Name)
		if g.UUID != "" {
			ew.printf(" (%s)", g.UUID)
		}
		ew.printf("\n")
	}
	ew.printf("%s, %s, %s, %s over %s\n", plural(m.Calls, "call"), plural(m.Events, "event"),
		plural(len(r.Processes), "process"), plural(len(r.Threads), "thread"), dur(m.SpanNs))
	writeCaptures(ew, m)
	if r.Loss != nil {
		ew.printf("\n!! TRUNCATED TRACE: reading stopped at byte %d (%s); %d bytes after it were lost.\n"+
			"!! The tables below cover only what was read.\n", r.Loss.Offset, r.Loss.Reason, r.Loss.Bytes)
	}
	if r.Drops.Total > 0 {
		ew.printf("\n!! %d EVENTS DROPPED by the capture (see Drops): the tables below undercount.\n", r.Drops.Total)
	}

	ew.printf("\nCUDA driver API summary\n")
	if len(r.APIs) == 0 {
		ew.printf("  no driver calls recorded\n")
	} else {
		ew.table(apiTable(r.APIs))
		ew.printf("\nCategories\n")
		t := &table.Table{Header: []string{"Category", "Calls", "Total", "Time%", "Errors"}, Left: []bool{true}, Indent: "  "}
		for _, c := range r.Categories {
			t.Add(c.Category, itoa(c.Count), dur(c.TotalNs), quantity.Percent(c.Percent), itoa(c.Errors))
		}
		ew.table(t)
	}

	for _, d := range r.Devices {
		name := d.Name
		if name == "" {
			name = "device " + strconv.Itoa(int(d.Device))
		}
		if d.Device >= 0 {
			ew.printf("\nDevice %d (%s): %s, %s\n", d.Device, name, plural(d.Calls, "call"), dur(d.TotalNs))
		} else {
			ew.printf("\nCalls on an unknown device: %s, %s\n", plural(d.Calls, "call"), dur(d.TotalNs))
		}
		ew.table(apiTable(d.APIs))
		if len(d.Objects) > 0 {
			ew.printf("\n")
			ew.table(objectTable(d.Objects))
		}
	}

	if len(r.SetCurrent) > 0 {
		ew.printf("\ncuCtxSetCurrent by what it did on its thread\n")
		t := &table.Table{Header: []string{"Kind", "Calls", "Total", "Median", "P99"}, Left: []bool{true}, Indent: "  "}
		for _, s := range r.SetCurrent {
			t.Add(s.Kind, itoa(s.Count), dur(s.TotalNs), dur(s.MedianNs), dur(s.P99Ns))
		}
		ew.table(t)
	}

	ew.printf("\nObject lifecycles (churn: created and destroyed within 1 ms)\n")
	if len(r.Objects) == 0 {
		ew.printf("  no objects created\n")
	} else {
		ew.table(objectTable(r.Objects))
	}
	if r.Unpaired > 0 {
		ew.printf("  %d destroy or release calls named objects not created in the trace\n", r.Unpaired)
	}

	ew.printf("\nProcesses\n")
	if len(r.Processes) == 0 {
		ew.printf("  none\n")
	} else {
		// Rank and host columns when some process has a rank, or the
		// processes are of several hosts.
		ranks, hosts := false, map[string]bool{}
		for _, p := range r.Processes {
			ranks = ranks || p.Rank != nil
			hosts[p.Host] = true
		}
		job := ranks || len(hosts) > 1
		t := &table.Table{Header: []string{"PID", "PPID", "Threads", "Calls", "Total", "Exit", "Command"},
			Left: []bool{false, false, false, false, false, false, true}, Indent: "  "}
		if job {
			t.Header = append([]string{"Rank", "Local", "Host"}, t.Header...)
			t.Left = append([]bool{false, false, true}, t.Left...)
		}
		for _, p := range r.Processes {
			exit := strconv.Itoa(int(p.ExitCode))
			if p.ExitCode < 0 {
				exit = "-"
			}
			pid := p.PID
			if p.OSPID != 0 {
				pid = p.OSPID
			}
			row := []string{u32(pid), u32(p.PPID), itoa(p.Threads), itoa(p.Calls), dur(p.TotalNs), exit, p.Command}
			if job {
				row = append([]string{optInt(p.Rank), optInt(p.LocalRank), p.Host}, row...)
			}
			t.Add(row...)
		}
		ew.table(t)
	}
	if len(r.Threads) > 0 {
		ew.printf("\nThreads\n")
		t := &table.Table{Header: []string{"PID", "TID", "Name", "Calls", "Total", "Errors", "Dropped"},
			Left: []bool{false, false, true}, Indent: "  "}
		for _, th := range r.Threads {
			t.Add(u32(th.PID), u32(th.TID), th.Name, itoa(th.Calls), dur(th.TotalNs), itoa(th.Errors),
				strconv.FormatUint(th.Dropped, 10))
		}
		ew.table(t)
	}

	if len(r.Ranges) > 0 {
		ew.printf("\nNVTX ranges and spans\n")
		t := &table.Table{Header: []string{"Range", "Count", "Total", "Mean"}, Left: []bool{true}, Indent: "  "}
		for _, rg := range r.Ranges {
			name := rg.Name
			if rg.Domain != "" {
				name = rg.Domain + ":" + name
			}
			t.Add(name, itoa(rg.Count), dur(rg.TotalNs), quantity.Duration(rg.MeanNs))
		}
		ew.table(t)
	}

	if len(r.Frames) > 0 {
		writeFrames(ew, r.Frames)
	}
	if len(r.Sites) > 0 {
		writeSites(ew, r.Sites)
	}
	if len(r.Named) > 0 {
		writeNamed(ew, r.Named)
	}

	ew.printf("\nDrops: %d events", r.Drops.Total)
	if r.Drops.Total == 0 {
		ew.printf(" (none lost)\n")
	} else {
		ew.printf(" LOST\n")
		t := &table.Table{Header: []string{"PID", "TID", "Events", "Reason"}, Left: []bool{false, false, false, true}, Indent: "  "}
		for _, d := range r.Drops.PerThread {
			t.Add(u32(d.PID), u32(d.TID), strconv.FormatUint(d.Events, 10), d.Reason)
		}
		ew.table(t)
	}
	if len(r.Untabled) > 0 {
		var n uint64
		for _, u := range r.Untabled {
			n += u.Calls
		}
		ew.printf("\nDriver functions not in cuprof's API table: %d calls of %s, passed through and counted, not timed\n",
			n, plural(len(r.Untabled), "function"))
		t := &table.Table{Header: []string{"Function", "Calls"}, Left: []bool{true}, Indent: "  "}
		for _, u := range r.Untabled {
			t.Add(u.Name, strconv.FormatUint(u.Calls, 10))
		}
		ew.table(t)
	}
	if len(r.PassedThrough) > 0 {
		var n uint64
		for _, u := range r.PassedThrough {
			n += u.Calls
		}
		ew.printf("\nPassed through unrecorded (--pass-through): %d calls of %s, counted, not timed: their time is their callers'\n",
			n, plural(len(r.PassedThrough), "API"))
		t := &table.Table{Header: []string{"API", "Calls"}, Left: []bool{true}, Indent: "  "}
		for _, u := range r.PassedThrough {
			t.Add(u.Name, strconv.FormatUint(u.Calls, 10))
		}
		ew.table(t)
	}
	switch r.Drops.WhenFull {
	case "wait":
		ew.printf("When a ring was full: the writer waited for room (--when-full wait); %s, %s in all.\n",
			plural(int(r.Drops.FullWaits), "wait"), dur(r.Drops.FullWaitNs))
	case "drop":
		ew.printf("When a ring was full: the event was dropped and counted (--when-full drop).\n")
	}

	o := r.Overhead
	if o.InsideNs == 0 && o.AddedNs == 0 {
		ew.printf("\nProfiler cost: not calibrated in this trace.\n")
	} else {
		ew.printf("\nProfiler cost: %s inside each call, %s added per call, about %s over %s.\n",
			quantity.Duration(o.InsideNs), quantity.Duration(o.AddedNs), dur(o.TotalAddedNs), plural(m.Calls, "call"))
		if o.InPlaceCalls > 0 {
			ew.printf("The added cost includes %s measured in place (%s of the program's own, against the calibrator's loop).\n",
				signedDuration(o.InPlaceNs), plural(int(o.InPlaceCalls), "call"))
		}
	}
	if o.Subtracted {
		ew.printf("Call times above have %s (the inside cost, rounded) subtracted from each call, clamped at 0.\n",
			dur(o.SubtractedNs))
	} else {
		ew.printf("Call times above are as recorded (no profiler cost subtracted).\n")
	}
	ew.printf("Median and p99 are nearest-rank percentiles: values that occurred.\n")
	return ew.err
}

// plural returns "1 call", "2 calls", "2 processes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return strconv.Itoa(n) + " " + noun + "es"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

func apiTable(rows []APIRow) *table.Table {
	t := &table.Table{Header: []string{"API", "Calls", "Total", "Time%", "Mean", "Median", "P99", "Min", "Max", "Errors"},
		Left: []bool{true}, Indent: "  "}
	for _, a := range rows {
		t.Add(a.API, itoa(a.Count), dur(a.TotalNs), quantity.Percent(a.Percent), quantity.Duration(a.MeanNs), dur(a.MedianNs),
			dur(a.P99Ns), dur(a.MinNs), dur(a.MaxNs), itoa(a.Errors))
	}
	return t
}

func objectTable(rows []ObjectRow) *table.Table {
	t := &table.Table{Header: []string{"Object", "Created", "Destroyed", "Implicit", "Alive at exit",
		"Lifetime median", "Lifetime p99", "Churn", "Bytes"}, Left: []bool{true}, Indent: "  "}
	for _, o := range rows {
		med, p99 := "-", "-"
		if o.Destroyed > 0 {
			med, p99 = dur(o.LifetimeMedianNs), dur(o.LifetimeP99Ns)
		}
		bytes := "-"
		if o.Bytes > 0 {
			bytes = quantity.Bytes(o.Bytes)
		}
		t.Add(o.Kind, itoa(o.Created), itoa(o.Destroyed), itoa(o.Implicit), itoa(o.Alive), med, p99,
			itoa(o.Churn), bytes)
	}
	return t
}

// maxFrameRows is how many wrapper frames the text table shows; JSON and CSV
// have them all.
const maxFrameRows = 40

// writeFrames prints the Python wrapper frames table.
func writeFrames(ew *errWriter, frames []FrameRow) {
	ew.printf("\nPython wrapper frames (self: time in the frame itself, less the frames and driver calls inside)\n")
	t := &table.Table{Header: []string{"Frame", "Calls", "Inclusive", "Self", "Driver", "Self/call", "Where"},
		Left: []bool{true, false, false, false, false, false, true}, Indent: "  "}
	for i, f := range frames {
		if i == maxFrameRows {
			break
		}
		t.Add(f.Frame, itoa(f.Calls), dur(f.InclusiveNs), dur(f.SelfNs), dur(f.DriverNs), quantity.Duration(f.SelfPerCall), f.Where())
	}
	ew.table(t)
	if n := len(frames) - maxFrameRows; n > 0 {
		ew.printf("  %s more (see --format json or csv)\n", plural(n, "frame"))
	}
}

// maxSiteRows is how many call sites and named objects the text tables
// show; JSON and CSV have them all.
const maxSiteRows = 20

// writeSites prints the call sites table.
func writeSites(ew *errWriter, sites []SiteRow) {
	ew.printf("\nCall sites (where the program called the driver from)\n")
	t := &table.Table{Header: []string{"Site", "Calls", "Total", "Errors"}, Left: []bool{true}, Indent: "  "}
	for i, s := range sites {
		if i == maxSiteRows {
			break
		}
		t.Add(s.Site, itoa(s.Calls), dur(s.TotalNs), itoa(s.Errors))
	}
	ew.table(t)
	if n := len(sites) - maxSiteRows; n > 0 {
		ew.printf("  %s more (see --format json or csv)\n", plural(n, "site"))
	}
}

// writeNamed prints the named objects table.
func writeNamed(ew *errWriter, named []NamedRow) {
	ew.printf("\nNamed objects\n")
	t := &table.Table{Header: []string{"Name", "Kind", "Handle", "PID", "Device"}, Left: []bool{true, true, true}, Indent: "  "}
	for i, n := range named {
		if i == maxSiteRows {
			break
		}
		dev := "-"
		if n.Device >= 0 {
			dev = strconv.Itoa(int(n.Device))
		}
		t.Add(n.Name, n.Kind, n.Handle, u32(n.PID), dev)
	}
	ew.table(t)
	if n := len(named) - maxSiteRows; n > 0 {
		ew.printf("  %s more (see --format json or csv)\n", plural(n, "named object"))
	}
}

// writeCaptures says which capture ranges the trace holds, when it was
// recorded in ranges (at most 10 listed).
func writeCaptures(ew *errWriter, m Meta) {
	if m.CaptureRange == "" {
		return
	}
	var total int64
	for _, c := range m.Captures {
		total += c.Ns
	}
	ew.printf("capture ranges (%s): %s, %s in all; the call tables hold only what they recorded",
		m.CaptureRange, plural(len(m.Captures), "range"), dur(total))
	if m.OutsideCalls > 0 {
		ew.printf(" (%s outside them, kept for objects and contexts, are counted in the object tables only)",
			plural(m.OutsideCalls, "call"))
	}
	ew.printf("\n")
	for i, c := range m.Captures {
		if i == 10 {
			ew.printf("  ... %d more\n", len(m.Captures)-10)
			break
		}
		ew.printf("  range %d: pid %d, from +%s for %s, opened by %s\n", i+1, c.PID, dur(c.StartNs), dur(c.Ns), c.Opener)
	}
}

// signedDuration is quantity.Duration with a sign: "+6.2 ns", "-1.5 ns".
func signedDuration(ns float64) string {
	if ns < 0 {
		return "-" + quantity.Duration(-ns)
	}
	return "+" + quantity.Duration(ns)
}

// optInt is *v, or "-" when nil.
func optInt(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}
