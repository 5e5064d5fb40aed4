package lint

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// SARIF 2.1.0 (OASIS, docs.oasis-open.org/sarif/sarif/v2.1.0), the format
// of GitHub code scanning and other CI result viewers. Only the objects
// cuprof fills are declared; every field name and value follows the 2.1.0
// schema (TestSARIFMatchesTheSchema checks them).

// sarifSchema is the $schema of the logs WriteSARIF writes.
const sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool      sarifTool       `json:"tool"`
	Artifacts []sarifArtifact `json:"artifacts,omitempty"`
	Results   []sarifResult   `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	Name             string       `json:"name"`
	ShortDescription sarifMessage `json:"shortDescription"`
	HelpURI          string       `json:"helpUri"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifArtifact struct {
	Location sarifArtifactLocation `json:"location"`
	Roles    []string              `json:"roles"`
}

type sarifArtifactLocation struct {
	URI string `json:"uri"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Stacks     []sarifStack    `json:"stacks,omitempty"`
	Properties map[string]any  `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifMessage  `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation *sarifArtifactLocation `json:"artifactLocation,omitempty"`
	Region           *sarifRegion           `json:"region,omitempty"`
	Address          *sarifAddress          `json:"address,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifAddress struct {
	AbsoluteAddress uint64 `json:"absoluteAddress"`
	Kind            string `json:"kind"`
}

type sarifLogical struct {
	Name               string `json:"name,omitempty"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifStack struct {
	Message sarifMessage `json:"message"`
	Frames  []sarifFrame `json:"frames"`
}

type sarifFrame struct {
	Location sarifLocation `json:"location"`
	Module   string        `json:"module,omitempty"`
	ThreadID int           `json:"threadId,omitempty"`
}

// SARIFOptions say what WriteSARIF cannot learn from the findings.
type SARIFOptions struct {
	// Trace is the trace's path as given (the artifact the results are
	// found in); "" or "-" for standard input.
	Trace string
	// Version is cuprof's version.
	Version string
}

// sarifLevel maps a severity to SARIF's level.
func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// fileURI is a SARIF artifact URI for a file path: relative paths stay
// relative references, absolute ones become file:// URIs.
func fileURI(path string) string {
	if filepath.IsAbs(path) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
	}
	return (&url.URL{Path: filepath.ToSlash(path)}).String()
}

// WriteSARIF writes findings as one SARIF 2.1.0 log with one run: every
// rule cuprof has (id, name, description, help in docs/lint.md), and per
// finding its rule, level (error, warning, note for info), message with the
// fix, its location (the innermost Python frame with a source file, else
// the trace file) and its stack as frames, innermost first: the driver
// call's caller (symbol and address), then the Python frames.
func WriteSARIF(w io.Writer, fs []Finding, o SARIFOptions) error {
	traceURI := ""
	if o.Trace != "" && o.Trace != "-" {
		traceURI = fileURI(o.Trace)
	}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "cuprof",
		InformationURI: "https://github.com/cuprof/cuprof", Version: o.Version}}, Results: []sarifResult{}}
	index := map[string]int{}
	for i, r := range Rules {
		index[r.ID()] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: r.ID(), Name: ruleName(r.ID()),
			ShortDescription: sarifMessage{r.Doc()},
			HelpURI:          "https://github.com/cuprof/cuprof/blob/main/docs/lint.md#" + helpAnchor(r.ID())})
	}
	if traceURI != "" {
		run.Artifacts = []sarifArtifact{{Location: sarifArtifactLocation{traceURI}, Roles: []string{"analysisTarget"}}}
	}
	for _, f := range fs {
		res := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
			Message: sarifMessage{f.Message + "\nWhere: " + whereText(f.Where) + "\nFix: " + f.Fix},
			Properties: map[string]any{"count": f.Count, "costNs": f.CostNs, "exampleApi": f.Example.API,
				"exampleOffsetNs": f.Example.OffsetNs, "exampleDurationNs": f.Example.DurationNs, "pid": f.Where.PID}}
		if _, ok := index[f.Rule]; !ok {
			res.RuleIndex = -1
		}
		var frames []sarifFrame
		if f.Where.Caller != "" || f.Where.Function != "" {
			name := f.Where.Function
			if name == "" {
				name = f.Where.Caller
			}
			loc := sarifLocation{LogicalLocations: []sarifLogical{{FullyQualifiedName: name, Kind: "function"}}}
			if a, err := strconv.ParseUint(strings.TrimPrefix(f.Where.Caller, "0x"), 16, 64); err == nil {
				loc.PhysicalLocation = &sarifPhysical{Address: &sarifAddress{AbsoluteAddress: a, Kind: "instruction"}}
			}
			frames = append(frames, sarifFrame{Location: loc, ThreadID: int(f.Where.TID)})
		}
		var primary *sarifLocation
		for i := len(f.Where.Stack) - 1; i >= 0; i-- {
			fr := f.Where.Stack[i]
			loc := sarifLocation{LogicalLocations: []sarifLogical{{Name: lastPart(fr.Name), FullyQualifiedName: fr.Name, Kind: "function"}}}
			if fr.File != "" {
				loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: &sarifArtifactLocation{fileURI(fr.File)}}
				if fr.Line > 0 {
					loc.PhysicalLocation.Region = &sarifRegion{StartLine: int(fr.Line)}
				}
				if primary == nil {
					p := loc
					primary = &p
				}
			}
			frames = append(frames, sarifFrame{Location: loc, Module: fr.Module, ThreadID: int(f.Where.TID)})
		}
		switch {
		case primary != nil:
			res.Locations = []sarifLocation{*primary}
		case traceURI != "":
			loc := sarifLocation{PhysicalLocation: &sarifPhysical{ArtifactLocation: &sarifArtifactLocation{traceURI}},
				Message: &sarifMessage{"in the trace " + o.Trace + ": " + whereText(f.Where)}}
			if len(frames) > 0 {
				loc.LogicalLocations = frames[0].Location.LogicalLocations
			}
			res.Locations = []sarifLocation{loc}
		default:
			res.Locations = []sarifLocation{}
			if len(frames) > 0 {
				res.Locations = []sarifLocation{{LogicalLocations: frames[0].Location.LogicalLocations}}
			}
		}
		if len(frames) > 0 {
			res.Stacks = []sarifStack{{Message: sarifMessage{"the driver call's stack, innermost first"}, Frames: frames}}
		}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}})
}

// helpAnchor is the rule's heading in docs/lint.md.
func helpAnchor(id string) string {
	if id == "stream-churn" || id == "event-churn" {
		return "stream-churn-and-event-churn"
	}
	return id
}

// ruleName is a rule id in SARIF's PascalCase name form: pool-trim is PoolTrim.
func ruleName(id string) string {
	var b strings.Builder
	for _, p := range strings.Split(id, "-") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// lastPart is a qualified name's last component.
func lastPart(name string) string {
	if i := strings.LastIndexAny(name, ". "); i >= 0 {
		return name[i+1:]
	}
	return name
}

// csvHeader is WriteCSV's first row.
var csvHeader = []string{"rule", "severity", "count", "cost_ns", "message", "range", "python", "pid", "tid",
	"thread", "caller", "function", "example_api", "example_offset_ns", "example_duration_ns", "fix"}

// WriteCSV writes findings as one CSV table, a header and a row per finding.
func WriteCSV(w io.Writer, fs []Finding) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for _, f := range fs {
		cw.Write([]string{f.Rule, f.Severity.String(), strconv.Itoa(f.Count), strconv.FormatInt(f.CostNs, 10), f.Message,
			f.Where.Range, f.Where.Python, strconv.FormatUint(uint64(f.Where.PID), 10), strconv.FormatUint(uint64(f.Where.TID), 10),
			f.Where.Thread, f.Where.Caller, f.Where.Function, f.Example.API, strconv.FormatInt(f.Example.OffsetNs, 10),
			strconv.FormatInt(f.Example.DurationNs, 10), f.Fix})
	}
	cw.Flush()
	return cw.Error()
}
