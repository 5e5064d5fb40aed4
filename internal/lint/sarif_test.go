package lint

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The published SARIF 2.1.0 schema (OASIS) is not committed: the OASIS
// repository it comes from carries no licence that lets a copy be
// redistributed. sarifObjects is a structural check written from the 2.1.0
// specification instead: for every object WriteSARIF fills, the properties
// the schema allows there (it forbids all others: additionalProperties is
// false throughout), and those it requires. With CUPROF_SARIF_SCHEMA naming
// a copy of sarif-schema-2.1.0.json and Python's jsonschema installed,
// TestSARIFMatchesThePublishedSchema validates against the schema itself.
var sarifObjects = map[string]struct{ allowed, required []string }{
	"log":              {[]string{"$schema", "version", "runs", "inlineExternalProperties", "properties"}, []string{"version", "runs"}},
	"run":              {[]string{"tool", "invocations", "artifacts", "results", "logicalLocations", "properties", "originalUriBaseIds", "automationDetails", "columnKind"}, []string{"tool"}},
	"tool":             {[]string{"driver", "extensions", "properties"}, []string{"driver"}},
	"toolComponent":    {[]string{"name", "version", "semanticVersion", "informationUri", "rules", "organization", "fullName", "shortDescription", "fullDescription", "properties"}, []string{"name"}},
	"rule":             {[]string{"id", "name", "shortDescription", "fullDescription", "defaultConfiguration", "helpUri", "help", "properties"}, []string{"id"}},
	"message":          {[]string{"text", "markdown", "id", "arguments", "properties"}, nil},
	"artifact":         {[]string{"location", "roles", "mimeType", "length", "properties"}, nil},
	"artifactLocation": {[]string{"uri", "uriBaseId", "index", "description", "properties"}, nil},
	"result":           {[]string{"ruleId", "ruleIndex", "rule", "kind", "level", "message", "locations", "stacks", "codeFlows", "relatedLocations", "fingerprints", "partialFingerprints", "properties"}, []string{"message"}},
	"location":         {[]string{"id", "physicalLocation", "logicalLocations", "message", "annotations", "relationships", "properties"}, nil},
	"physicalLocation": {[]string{"address", "artifactLocation", "region", "contextRegion", "properties"}, nil},
	"region":           {[]string{"startLine", "startColumn", "endLine", "endColumn", "charOffset", "charLength", "byteOffset", "byteLength", "snippet", "message", "sourceLanguage", "properties"}, nil},
	"address":          {[]string{"absoluteAddress", "relativeAddress", "length", "kind", "name", "fullyQualifiedName", "offsetFromParent", "index", "parentIndex", "properties"}, nil},
	"logicalLocation":  {[]string{"name", "index", "fullyQualifiedName", "decoratedName", "parentIndex", "kind", "properties"}, nil},
	"stack":            {[]string{"message", "frames", "properties"}, []string{"frames"}},
	"stackFrame":       {[]string{"location", "module", "threadId", "parameters", "properties"}, nil},
}

// checkObject checks that v is an object of kind with only allowed and all
// required properties; it returns the object.
func checkObject(t *testing.T, at, kind string, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %s is %T, not an object", at, kind, v)
	}
	spec := sarifObjects[kind]
	for k := range m {
		found := false
		for _, a := range spec.allowed {
			found = found || a == k
		}
		if !found {
			t.Errorf("%s: %s has property %q, which SARIF 2.1.0 does not allow there", at, kind, k)
		}
	}
	for _, r := range spec.required {
		if _, ok := m[r]; !ok {
			t.Errorf("%s: %s lacks required %q", at, kind, r)
		}
	}
	return m
}

func list(t *testing.T, at string, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %T, not an array", at, v)
	}
	return l
}

func checkLocation(t *testing.T, at string, v any) map[string]any {
	loc := checkObject(t, at, "location", v)
	if pl, ok := loc["physicalLocation"]; ok {
		p := checkObject(t, at+".physicalLocation", "physicalLocation", pl)
		if al, ok := p["artifactLocation"]; ok {
			a := checkObject(t, at+".artifactLocation", "artifactLocation", al)
			if u, _ := a["uri"].(string); u == "" {
				t.Errorf("%s: empty artifact uri", at)
			}
		}
		if r, ok := p["region"]; ok {
			reg := checkObject(t, at+".region", "region", r)
			if l, _ := reg["startLine"].(float64); l < 1 {
				t.Errorf("%s: startLine %v, want >= 1", at, reg["startLine"])
			}
		}
		if a, ok := p["address"]; ok {
			ad := checkObject(t, at+".address", "address", a)
			if v, _ := ad["absoluteAddress"].(float64); v < -1 {
				t.Errorf("%s: absoluteAddress %v", at, v)
			}
		}
	}
	for i, l := range list(t, at+".logicalLocations", orEmpty(loc["logicalLocations"])) {
		checkObject(t, at+".logicalLocations", "logicalLocation", l)
		_ = i
	}
	if m, ok := loc["message"]; ok {
		checkObject(t, at+".message", "message", m)
	}
	return loc
}

func orEmpty(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

// checkSARIF checks a log against sarifObjects and the rules the schema
// states in words: version 2.1.0, unique rule ids, each result's ruleIndex
// naming its ruleId, levels from the enum, and (GitHub code scanning's
// requirement) a physical location with an artifact URI per result.
func checkSARIF(t *testing.T, data []byte, wantResults int) map[string]any {
	t.Helper()
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	log := checkObject(t, "log", "log", doc)
	if log["version"] != "2.1.0" {
		t.Errorf("version %v", log["version"])
	}
	runs := list(t, "runs", log["runs"])
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	run := checkObject(t, "run", "run", runs[0])
	tool := checkObject(t, "tool", "tool", run["tool"])
	driver := checkObject(t, "driver", "toolComponent", tool["driver"])
	var ids []string
	for _, r := range list(t, "rules", driver["rules"]) {
		rule := checkObject(t, "rule", "rule", r)
		checkObject(t, "rule.shortDescription", "message", rule["shortDescription"])
		ids = append(ids, rule["id"].(string))
	}
	if len(ids) != len(Rules) {
		t.Errorf("%d rules, want %d", len(ids), len(Rules))
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			t.Errorf("rule id %s twice", sorted[i])
		}
	}
	for _, a := range list(t, "artifacts", orEmpty(run["artifacts"])) {
		art := checkObject(t, "artifact", "artifact", a)
		checkObject(t, "artifact.location", "artifactLocation", art["location"])
	}
	results := list(t, "results", run["results"])
	if len(results) != wantResults {
		t.Errorf("%d results, want %d", len(results), wantResults)
	}
	for i, r := range results {
		res := checkObject(t, "result", "result", r)
		msg := checkObject(t, "result.message", "message", res["message"])
		if s, _ := msg["text"].(string); s == "" {
			t.Errorf("result %d: empty message", i)
		}
		idx := int(res["ruleIndex"].(float64))
		if idx < 0 || idx >= len(ids) || ids[idx] != res["ruleId"] {
			t.Errorf("result %d: ruleIndex %d does not name ruleId %v", i, idx, res["ruleId"])
		}
		switch res["level"] {
		case "none", "note", "warning", "error":
		default:
			t.Errorf("result %d: level %v", i, res["level"])
		}
		locs := list(t, "locations", res["locations"])
		if len(locs) == 0 {
			t.Errorf("result %d: no location", i)
		}
		for _, l := range locs {
			loc := checkLocation(t, "result.location", l)
			pl, _ := loc["physicalLocation"].(map[string]any)
			if _, ok := pl["artifactLocation"]; !ok {
				t.Errorf("result %d: no physical location with an artifact (GitHub code scanning needs one)", i)
			}
		}
		for _, s := range list(t, "stacks", orEmpty(res["stacks"])) {
			st := checkObject(t, "stack", "stack", s)
			frames := list(t, "frames", st["frames"])
			if len(frames) == 0 {
				t.Errorf("result %d: a stack without frames", i)
			}
			for _, f := range frames {
				fr := checkObject(t, "frame", "stackFrame", f)
				checkLocation(t, "frame.location", fr["location"])
			}
		}
	}
	return run
}

func sarifOf(t *testing.T, name, tracePath string) ([]byte, []Finding) {
	t.Helper()
	fs := Run(readFixture(t, name))
	var b bytes.Buffer
	if err := WriteSARIF(&b, fs, SARIFOptions{Trace: tracePath, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), fs
}

func TestSARIF(t *testing.T) {
	for _, name := range []string{"pool_trim", "leak", "clean", "python_wrapper"} {
		t.Run(name, func(t *testing.T) {
			data, fs := sarifOf(t, name, "testdata/"+name+".txt")
			run := checkSARIF(t, data, len(fs))
			checkGolden(t, name+".golden.sarif", data)
			results := run["results"].([]any)
			for i, f := range fs {
				res := results[i].(map[string]any)
				if res["ruleId"] != f.Rule || res["level"] != sarifLevel(f.Severity) {
					t.Errorf("result %d: %v %v, want %s %s", i, res["ruleId"], res["level"], f.Rule, sarifLevel(f.Severity))
				}
				if !strings.Contains(res["message"].(map[string]any)["text"].(string), f.Fix) {
					t.Errorf("result %d: the message lacks the fix", i)
				}
			}
			if name == "python_wrapper" {
				// The Python frames are the stack, and the innermost with a
				// file is the location, at its line.
				res := results[0].(map[string]any)
				loc := res["locations"].([]any)[0].(map[string]any)
				uri := loc["physicalLocation"].(map[string]any)["artifactLocation"].(map[string]any)["uri"].(string)
				if !strings.HasSuffix(uri, ".py") {
					t.Errorf("python finding located at %q, want its .py file", uri)
				}
				frames := res["stacks"].([]any)[0].(map[string]any)["frames"].([]any)
				if len(frames) < len(fs[0].Where.Stack) {
					t.Errorf("%d frames for a stack of %d", len(frames), len(fs[0].Where.Stack))
				}
			}
		})
	}
}

// TestSARIFMatchesThePublishedSchema validates WriteSARIF's logs against
// the published sarif-schema-2.1.0.json, named by CUPROF_SARIF_SCHEMA, with
// Python's jsonschema (draft 4, formats checked).
func TestSARIFMatchesThePublishedSchema(t *testing.T) {
	schema := os.Getenv("CUPROF_SARIF_SCHEMA")
	if schema == "" {
		t.Skip("set CUPROF_SARIF_SCHEMA to a copy of sarif-schema-2.1.0.json (not committed: see sarifObjects)")
	}
	py, err := exec.LookPath("python3")
	if err != nil || exec.Command(py, "-c", "import jsonschema").Run() != nil {
		t.Skip("needs python3 with jsonschema")
	}
	dir := t.TempDir()
	for _, name := range []string{"pool_trim", "leak", "clean", "python_wrapper"} {
		data, _ := sarifOf(t, name, "testdata/"+name+".txt")
		p := filepath.Join(dir, name+".sarif")
		os.WriteFile(p, data, 0o600)
		out, err := exec.Command(py, "-c", `import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(json.load(open(sys.argv[2])))`,
			schema, p).CombinedOutput()
		if err != nil {
			t.Errorf("%s: not valid SARIF 2.1.0: %v\n%s", name, err, out)
		}
	}
}

func TestLintCSV(t *testing.T) {
	fs := Run(readFixture(t, "pool_trim"))
	var b bytes.Buffer
	if err := WriteCSV(&b, fs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(fs)+1 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("rows %q", rows)
	}
	for i, f := range fs {
		if rows[i+1][0] != f.Rule || rows[i+1][1] != f.Severity.String() || rows[i+1][len(csvHeader)-1] != f.Fix {
			t.Errorf("row %d: %q", i+1, rows[i+1])
		}
	}
}
