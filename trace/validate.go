package trace

import (
	"errors"
	"fmt"
	"math/bits"
)

// maxProblems bounds how many problems Validate lists.
const maxProblems = 20

// Validate checks t against the record table of fields.go: every event has a
// known kind, sets only the fields its kind uses, and is an instant (End ==
// Start) unless its kind has a duration; string IDs are in range and
// Strings[0] is empty; code IDs are in range, Code[0] is the zero entry and
// every other entry has a known kind and a name; frames carry only known
// FrameFlag bits; events are in SortEvents order. It returns nil or an
// error listing the first problems found. Readers do not call it: they keep
// whatever a file holds, and tools decide what to do with odd records.
func (t *Trace) Validate() error {
	var problems []error
	total := 0
	add := func(format string, args ...any) {
		total++
		if len(problems) < maxProblems {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	if len(t.Strings) > 0 && t.Strings[0] != "" {
		add("Strings[0] is %q, want the empty string", t.Strings[0])
	}
	for i, c := range t.Code {
		if i == 0 {
			if c != (Code{}) {
				add("Code[0] is %+v, want the zero entry", c)
			}
			continue
		}
		if !c.Kind.Valid() {
			add("code %d: unknown kind %d", i, c.Kind)
		}
		if max(c.Name, c.Module, c.File) >= StringID(len(t.Strings)) {
			add("code %d: string ID out of range (%d strings)", i, len(t.Strings))
		} else if t.Strings[c.Name] == "" {
			add("code %d: no name", i)
		}
	}
	var allowed [kindLimit]uint16
	for k := KindCall; k < kindLimit; k++ {
		for _, f := range kindSpecs[k].fields {
			allowed[k] |= 1 << f
		}
	}
	for i := range t.Events {
		e := &t.Events[i]
		if !e.Kind.Valid() {
			add("event %d: unknown kind %d", i, e.Kind)
			continue
		}
		extra := presence(e) &^ allowed[e.Kind]
		for extra != 0 {
			f := field(bits.TrailingZeros16(extra))
			extra &= extra - 1
			add("event %d (%s at t=%d): field %s is not used by %s events", i, e.Kind, e.Start, eventFields[f].key, e.Kind)
		}
		if e.End < e.Start {
			add("event %d (%s at t=%d): ends before it starts (end=%d)", i, e.Kind, e.Start, e.End)
		}
		if int(e.Name) >= len(t.Strings) && e.Name != 0 || int(e.Domain) >= len(t.Strings) && e.Domain != 0 {
			add("event %d (%s at t=%d): string ID out of range (%d strings)", i, e.Kind, e.Start, len(t.Strings))
		}
		if e.Code != 0 && int(e.Code) >= len(t.Code) {
			add("event %d (%s at t=%d): code ID %d out of range (%d code entries)", i, e.Kind, e.Start, e.Code, len(t.Code))
		}
		if e.Kind == KindFrame {
			if e.Code == 0 {
				add("event %d (frame at t=%d): no code", i, e.Start)
			}
			if e.Flags&^(FrameUnwound|FrameYielded|FrameOpen) != 0 {
				add("event %d (frame at t=%d): unknown flags %#x", i, e.Start, e.Flags)
			}
		}
		if i > 0 && eventLess(e, &t.Events[i-1]) {
			add("event %d (%s at t=%d): out of SortEvents order", i, e.Kind, e.Start)
		}
	}
	if total == 0 {
		return nil
	}
	if total > len(problems) {
		problems = append(problems, fmt.Errorf("and %d more problems", total-len(problems)))
	}
	return fmt.Errorf("invalid trace: %w", errors.Join(problems...))
}
