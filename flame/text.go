package flame

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// WriteText writes a deterministic text rendering of p: its sample types and
// comments, then one line per sample, sorted, with the sample's values, its
// stack root first (frames joined by ";") and its labels. Samples with the
// same stack and labels are summed. It is the golden-file form of a profile.
func WriteText(w io.Writer, p *profile.Profile) error {
	var b strings.Builder
	b.WriteString("types:")
	for _, st := range p.SampleType {
		fmt.Fprintf(&b, " %s/%s", st.Type, st.Unit)
	}
	fmt.Fprintf(&b, " default=%s\n", p.DefaultSampleType)
	for _, c := range p.Comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	sums := map[string][]int64{}
	for _, s := range p.Sample {
		var line strings.Builder
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			for j := len(l.Line) - 1; j >= 0; j-- {
				if line.Len() > 0 {
					line.WriteString(";")
				}
				line.WriteString(l.Line[j].Function.Name)
			}
			if len(l.Line) == 0 {
				if line.Len() > 0 {
					line.WriteString(";")
				}
				fmt.Fprintf(&line, "0x%x", l.Address)
			}
		}
		line.WriteString(labelText(s))
		k := line.String()
		v := sums[k]
		if v == nil {
			v = make([]int64, len(s.Value))
		}
		for i := range s.Value {
			v[i] += s.Value[i]
		}
		sums[k] = v
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for i, v := range sums[k] {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprint(&b, v)
		}
		fmt.Fprintf(&b, " %s\n", k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func labelText(s *profile.Sample) string {
	var parts []string
	for k, vs := range s.Label {
		for _, v := range vs {
			parts = append(parts, fmt.Sprintf("%s=%s", k, v))
		}
	}
	for k, vs := range s.NumLabel {
		for i, v := range vs {
			unit := ""
			if u := s.NumUnit[k]; i < len(u) {
				unit = u[i]
			}
			parts = append(parts, fmt.Sprintf("%s=%d%s", k, v, unitSuffix(unit)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return " {" + strings.Join(parts, " ") + "}"
}

func unitSuffix(u string) string {
	switch u {
	case "", "count":
		return ""
	case "bytes":
		return "B"
	}
	return u
}
