// Command apigen turns trace/spec/driver_apis.txt, the table of what each CUDA
// driver API means, and trace/spec/cuda_functions.txt, every function the
// driver's headers declare, into the Go tables of package trace, the C
// headers shared by the interposer shim and the simulated driver (ids, one
// wrapper row per exported symbol with its prototype in an ABI-equivalent
// type vocabulary, costs, the cuGetProcAddress version table), the simulated
// driver's stubs and the every-function test program.
//
// With -headers it instead regenerates cuda_functions.txt from the headers
// (which are not committed), and with -sync it appends a row with a new id to
// driver_apis.txt for each API of cuda_functions.txt the table lacks.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// row is one line of the API table: one API, or the variants of one API that
// share capture expressions.
type row struct {
	line      int
	id        int
	api       string
	category  string
	object    string
	role      string
	auxObject string
	auxRole   string
	work      string // queue wait -
	errors    string // not-ready -
	cost      int    // ns on the simulated driver
	symbols   []string
	all       bool // symbols "*": every variant not listed on another row
	handle    string
	stream    string
	// streamHidden: stream "?": the call queues on a stream its
	// arguments hold where the record cannot take it (cuLaunchKernelEx:
	// inside its config); stream is then "-"
	streamHidden bool
	aux          string
	size         string
	flags        string
	device       string
	meaning      bool // more than id, api and category given
}

type objectDecl struct {
	id   int
	name string
	doc  string // what the kind is, for the Go constant's comment
}

// spec is the parsed table joined with the header's functions.
type spec struct {
	rows       []row
	apis       []string // apis[i] has ID i+1
	info       map[string]*row
	objects    []objectDecl
	categories []string
	funcs      *headerSet
	variants   map[string][]*hdrFunc // api -> its symbols, sorted
	rowOf      map[string]*row       // symbol -> the row that covers it
}

// maxAPIID bounds the explicit ids (API is a uint16 on the wire; the shim's
// tables are indexed by id).
const maxAPIID = 4096

// fullFields is the number of fields of a row with meaning; a row of only
// id, api and category is an API whose meaning is not written yet.
const fullFields = 16

var roles = map[string]bool{"-": true, "create": true, "destroy": true, "retain": true, "release": true, "get": true, "use": true}

func parseSpec(data []byte, funcs *headerSet) (*spec, error) {
	s := &spec{info: map[string]*row{}, funcs: funcs, variants: map[string][]*hdrFunc{}, rowOf: map[string]*row{}}
	byID := map[int]*row{}
	objects := map[string]bool{"-": true}
	objectIDs := map[int]bool{}
	categories := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20) // grown as long lines need, up to 1 MiB
	n := 0
	last := ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "object "); ok {
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, fmt.Errorf("spec line %d: want `object NUMBER NAME [what it is]`", n)
			}
			doc := strings.Join(f[2:], " ")
			f = f[:2]
			id, err := strconv.Atoi(f[0])
			if len(f) != 2 || err != nil || id < 1 || id > 255 || objectIDs[id] || objects[f[1]] {
				return nil, fmt.Errorf("spec line %d: want `object NUMBER NAME`, a new number 1-255 and name", n)
			}
			if id != len(s.objects)+1 {
				return nil, fmt.Errorf("spec line %d: object numbers run from 1 without gaps (want %d)", n, len(s.objects)+1)
			}
			objectIDs[id], objects[f[1]] = true, true
			s.objects = append(s.objects, objectDecl{id, f[1], doc})
			continue
		}
		if rest, ok := strings.CutPrefix(line, "category "); ok {
			for _, c := range strings.Fields(rest) {
				if categories[c] {
					return nil, fmt.Errorf("spec line %d: category %s declared twice", n, c)
				}
				categories[c] = true
				s.categories = append(s.categories, c)
			}
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != fullFields && len(f) != 3 {
			return nil, fmt.Errorf("spec line %d: %d fields, want %d (or 3: id, api, category)", n, len(f), fullFields)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		for len(f) < fullFields {
			f = append(f, "-")
		}
		id, err := strconv.Atoi(f[0])
		if err != nil || id < 1 || id > maxAPIID {
			return nil, fmt.Errorf("spec line %d: bad id %q (want 1 to %d)", n, f[0], maxAPIID)
		}
		r := row{line: n, id: id, api: f[1], category: f[2], object: f[3], role: f[4], work: f[6], errors: f[7],
			handle: f[10], stream: f[11], aux: f[12], size: f[13], flags: f[14], device: f[15]}
		for _, x := range f[3:] {
			if x != "-" {
				r.meaning = true
			}
		}
		if r.stream == "?" {
			r.stream, r.streamHidden = "-", true
		}
		if !reSymbol.MatchString(r.api) {
			return nil, fmt.Errorf("spec line %d: bad api name %q", n, r.api)
		}
		if !categories[r.category] {
			return nil, fmt.Errorf("spec line %d: unknown category %q (declare it on a category line)", n, r.category)
		}
		if !objects[r.object] || !roles[r.role] {
			return nil, fmt.Errorf("spec line %d: unknown object %q or role %q", n, r.object, r.role)
		}
		if (r.object == "-") != (r.role == "-") {
			return nil, fmt.Errorf("spec line %d: object and role go together", n)
		}
		if f[5] != "-" {
			ar := strings.Fields(f[5])
			if len(ar) != 2 || !objects[ar[0]] || ar[0] == "-" || !roles[ar[1]] || ar[1] == "-" {
				return nil, fmt.Errorf("spec line %d: aux-effect %q: want `OBJECT ROLE`", n, f[5])
			}
			if r.aux == "-" {
				return nil, fmt.Errorf("spec line %d: an aux-effect needs an aux expression", n)
			}
			r.auxObject, r.auxRole = ar[0], ar[1]
		}
		switch r.work {
		case "-", "queue", "wait":
		default:
			return nil, fmt.Errorf("spec line %d: work %q: want queue, wait or -", n, r.work)
		}
		if r.streamHidden && r.work != "queue" {
			return nil, fmt.Errorf("spec line %d: stream ? (a stream the record cannot hold) is for an API that queues work", n)
		}
		switch r.errors {
		case "-", "not-ready":
		default:
			return nil, fmt.Errorf("spec line %d: errors %q: want not-ready or -", n, r.errors)
		}
		if f[8] != "-" {
			c, err := strconv.Atoi(f[8])
			if err != nil || c < 0 || c > 10_000_000 {
				return nil, fmt.Errorf("spec line %d: cost %q: want ns (0-10000000) or -", n, f[8])
			}
			r.cost = c
		}
		if f[9] == "*" || f[9] == "-" {
			r.all = true
		} else {
			r.symbols = strings.Fields(f[9])
		}
		if prev, ok := s.info[r.api]; ok {
			if last != r.api {
				return nil, fmt.Errorf("spec line %d: rows of %s not contiguous (first on line %d)", n, r.api, prev.line)
			}
			if prev.category != r.category || prev.object != r.object || prev.role != r.role || prev.id != r.id ||
				prev.auxObject != r.auxObject || prev.auxRole != r.auxRole || prev.work != r.work ||
				prev.errors != r.errors || prev.cost != r.cost {
				return nil, fmt.Errorf("spec line %d: %s's meaning (id to cost) differs from line %d", n, r.api, prev.line)
			}
		} else {
			if other, ok := byID[r.id]; ok {
				return nil, fmt.Errorf("spec line %d: id %d of %s is already %s's (line %d): ids are never reused",
					n, r.id, r.api, other.api, other.line)
			}
			rr := r
			byID[r.id] = &rr
			s.info[r.api] = &rr
		}
		last = r.api
		s.rows = append(s.rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.categories) == 0 || s.categories[0] != "other" {
		return nil, fmt.Errorf("spec: the first category must be other (the zero category)")
	}
	for id := 1; id <= len(byID); id++ {
		r, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("spec: no api has id %d: ids run from 1 to the number of apis without gaps (a new api takes %d)",
				id, len(byID)+1)
		}
		s.apis = append(s.apis, r.api)
	}
	if funcs != nil {
		if err := s.join(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// join assigns every header symbol to the row that covers it and checks
// the capture expressions against each covered prototype.
func (s *spec) join() error {
	for _, f := range s.funcs.Funcs {
		s.variants[f.API] = append(s.variants[f.API], f)
	}
	bySym := map[string]*hdrFunc{}
	for _, f := range s.funcs.Funcs {
		bySym[f.Symbol] = f
	}
	for api := range s.variants {
		if _, ok := s.info[api]; !ok {
			return fmt.Errorf("spec: %s (in cuda_functions.txt) has no row: run go generate ./trace with -sync, or add `ID | %s | CATEGORY`", api, api)
		}
	}
	for i := range s.rows {
		r := &s.rows[i]
		for _, sym := range r.symbols {
			f, ok := bySym[sym]
			if !ok || f.API != r.api {
				return fmt.Errorf("spec line %d: %s is not a variant of %s in cuda_functions.txt", r.line, sym, r.api)
			}
			if prev, ok := s.rowOf[sym]; ok {
				return fmt.Errorf("spec line %d: symbol %s already on line %d", r.line, sym, prev.line)
			}
			s.rowOf[sym] = r
		}
	}
	for i := range s.rows {
		r := &s.rows[i]
		if !r.all {
			continue
		}
		for _, f := range s.variants[r.api] {
			if _, ok := s.rowOf[f.Symbol]; !ok {
				s.rowOf[f.Symbol] = r
			}
		}
	}
	covers := map[*row]int{}
	for _, r := range s.rowOf {
		covers[r]++
	}
	for i := range s.rows {
		if covers[&s.rows[i]] == 0 {
			return fmt.Errorf("spec line %d: the row covers no variant of %s (another row names them all)", s.rows[i].line, s.rows[i].api)
		}
	}
	for _, api := range s.apis {
		if len(s.variants[api]) == 0 {
			return fmt.Errorf("spec: %s has no function in cuda_functions.txt", api)
		}
	}
	for _, f := range s.funcs.Funcs {
		r, ok := s.rowOf[f.Symbol]
		if !ok {
			return fmt.Errorf("spec: no row of %s covers %s (add it to a row's symbols, or give one row *)", f.API, f.Symbol)
		}
		for _, e := range []string{r.handle, r.stream, r.aux, r.size, r.flags, r.device} {
			if err := checkExpr(e, f, s.funcs); err != nil {
				return fmt.Errorf("spec line %d: %w", r.line, err)
			}
		}
	}
	return nil
}

var cWords = map[string]bool{"int": true, "unsigned": true, "long": true, "char": true, "const": true, "uintptr_t": true,
	"uint64_t": true, "uint32_t": true, "int64_t": true, "size_t": true, "sizeof": true, "void": true, "short": true}

// checkExpr fails when e names an identifier that is neither a parameter of
// f nor a C type word or type name: a row's expression must compile for
// every variant it covers.
func checkExpr(e string, f *hdrFunc, hs *headerSet) error {
	if e == "-" {
		return nil
	}
	params := map[string]bool{}
	for _, p := range f.Params {
		params[p.Name] = true
	}
	types := map[string]bool{}
	for _, t := range hs.Types {
		types[t.Name] = true
	}
	// Member names after . and -> are not identifiers of the scope.
	stripped := regexp.MustCompile(`(\.|->)\s*[A-Za-z_]\w*`).ReplaceAllString(e, "")
	for _, id := range reIdent.FindAllString(stripped, -1) {
		if params[id] || cWords[id] || types[id] || strings.HasPrefix(id, "CU_") || strings.HasPrefix(id, "CUDA_") {
			continue
		}
		if id[0] >= '0' && id[0] <= '9' {
			continue
		}
		return fmt.Errorf("expression %q names %s, which is not a parameter of %s(%s)", e, id, f.Symbol, f.prototype())
	}
	return nil
}

// goIdent turns "cuCtxSetCurrent" into "APICtxSetCurrent".
func goIdent(api string) string { return "API" + strings.TrimPrefix(api, "cu") }

func goEnum(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	up := true
	name = strings.ReplaceAll(name, "ipc", "IPC")
	for _, r := range name {
		if r == '-' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// args turns a parameter list into the argument names, in order.
func args(f *hdrFunc) string {
	var names []string
	for _, p := range f.Params {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

func cexpr(e string) string {
	if e == "-" {
		return "0"
	}
	return outGuard(e, "0")
}

// derefRE matches a pointer dereference: a '*' that starts an operand (after
// an opening parenthesis, '?', ':' or ',', or at the start), not a product;
// or a member read through a pointer.
var derefRE = regexp.MustCompile(`(^|[(?:,])\s*\*|->`)

// outGuard wraps an expression that reads through a pointer parameter in
// CUPROF_OUT(expr, dflt), so that the shim evaluates it only when the call
// succeeded (an output the driver did not write is not read).
func outGuard(e, dflt string) string {
	if derefRE.MatchString(e) {
		return "CUPROF_OUT(" + e + ", " + dflt + ")"
	}
	return e
}

// generated is every output of one run.
type generated struct {
	goSrc, cSrc, typesSrc, stubsSrc, everySrc []byte
}

// generate returns the outputs for the table and the functions list.
func generate(specData, funcsData []byte) (*generated, error) {
	funcs, err := parseFunctions(funcsData)
	if err != nil {
		return nil, err
	}
	s, err := parseSpec(specData, funcs)
	if err != nil {
		return nil, err
	}
	g := &generated{}
	if g.goSrc, err = s.goSource(); err != nil {
		return nil, fmt.Errorf("format generated Go: %w", err)
	}
	g.cSrc = s.cSource()
	if g.typesSrc, err = s.typesSource(); err != nil {
		return nil, err
	}
	g.stubsSrc = s.stubsSource()
	g.everySrc = s.everySource()
	return g, nil
}

// outputs pairs each output with its flag's path.
func (g *generated) outputs(goOut, cOut, typesOut, stubsOut, everyOut string) []struct {
	path string
	data []byte
} {
	return []struct {
		path string
		data []byte
	}{{goOut, g.goSrc}, {cOut, g.cSrc}, {typesOut, g.typesSrc}, {stubsOut, g.stubsSrc}, {everyOut, g.everySrc}}
}

func main() {
	specPath := flag.String("spec", "spec/driver_apis.txt", "the API table")
	funcsPath := flag.String("functions", "spec/cuda_functions.txt", "the list of every function the headers declare")
	goOut := flag.String("go", "apis_gen.go", "Go output")
	cOut := flag.String("c", "../cudawrap/shim/cuprof_apis.h", "C header output: ids, wrapper rows, costs, lookups")
	typesOut := flag.String("types", "../cudawrap/shim/cuprof_types.h", "C header output: the type vocabulary")
	stubsOut := flag.String("stubs", "../cudawrap/sim/csrc/stubs_gen.c", "the simulated driver's stubs")
	everyOut := flag.String("every", "../cudawrap/sim/testdata/every_gen.c", "the every-function test program")
	headers := flag.String("headers", "", "regenerate -functions from these header dirs: VERSION=DIR,... newest first")
	syncRows := flag.Bool("sync", false, "append a row with a new id to -spec for each API of -functions it lacks")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "apigen:", err)
		os.Exit(1)
	}
	if *headers != "" {
		s, err := readHeaderDirs(*headers)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(*funcsPath, s.format(), 0o644); err != nil {
			fail(err)
		}
		return
	}
	data, err := os.ReadFile(*specPath)
	if err != nil {
		fail(err)
	}
	funcsData, err := os.ReadFile(*funcsPath)
	if err != nil {
		fail(err)
	}
	if *syncRows {
		out, err := syncSpec(data, funcsData)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(*specPath, out, 0o644); err != nil {
			fail(err)
		}
		data = out
	}
	g, err := generate(data, funcsData)
	if err != nil {
		fail(err)
	}
	for _, o := range g.outputs(*goOut, *cOut, *typesOut, *stubsOut, *everyOut) {
		if err := os.WriteFile(o.path, o.data, 0o644); err != nil {
			fail(err)
		}
	}
}

// syncSpec appends a row for each API of the functions list the table does
// not have, with the next ids and a category guessed from the name.
func syncSpec(specData, funcsData []byte) ([]byte, error) {
	funcs, err := parseFunctions(funcsData)
	if err != nil {
		return nil, err
	}
	s, err := parseSpec(specData, nil)
	if err != nil {
		return nil, err
	}
	var missing []string
	seen := map[string]bool{}
	for _, f := range funcs.Funcs {
		if _, ok := s.info[f.API]; !ok && !seen[f.API] {
			seen[f.API] = true
			missing = append(missing, f.API)
		}
	}
	sort.Strings(missing)
	out := append([]byte(nil), specData...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	next := len(s.apis) + 1
	for _, api := range missing {
		out = append(out, fmt.Sprintf("%d | %s | %s\n", next, api, guessCategory(api, s.categories))...)
		next++
	}
	return out, nil
}

// guessCategory is the category a new API starts with, from its name.
func guessCategory(api string, cats []string) string {
	has := map[string]bool{}
	for _, c := range cats {
		has[c] = true
	}
	rules := []struct{ prefix, cat string }{
		{"cuStreamBeginCapture", "capture"}, {"cuStreamEndCapture", "capture"}, {"cuStreamIsCapturing", "capture"},
		{"cuStreamGetCaptureInfo", "capture"}, {"cuStreamUpdateCaptureDependencies", "capture"},
		{"cuThreadExchangeStreamCaptureMode", "capture"},
		{"cuGraph", "graph"}, {"cuUserObject", "graph"}, {"cuDeviceGraphMem", "graph"},
		{"cuMemAddress", "virtual-memory"}, {"cuMemCreate", "virtual-memory"}, {"cuMemRelease", "virtual-memory"},
		{"cuMemMap", "virtual-memory"}, {"cuMemUnmap", "virtual-memory"}, {"cuMemSetAccess", "virtual-memory"},
		{"cuMemGetAccess", "virtual-memory"}, {"cuMemExportToShareableHandle", "virtual-memory"},
		{"cuMemImportFromShareableHandle", "virtual-memory"}, {"cuMemGetAllocation", "virtual-memory"},
		{"cuMemRetainAllocationHandle", "virtual-memory"}, {"cuMulticast", "virtual-memory"},
		{"cuMemPool", "pool"}, {"cuMemHostRegister", "memory"}, {"cuMemHostUnregister", "memory"},
		{"cuMemcpy", "memcpy"}, {"cuMemset", "memcpy"}, {"cuMem", "memory"}, {"cuPointer", "memory"},
		{"cuIpc", "ipc"}, {"cuLibrary", "library"}, {"cuKernel", "library"},
		{"cuModule", "module"}, {"cuLink", "module"}, {"cuFunc", "module"},
		{"cuOccupancy", "occupancy"}, {"cuLaunch", "launch"},
		{"cuStreamSynchronize", "sync"}, {"cuStream", "stream"}, {"cuEvent", "event"},
		{"cuCtx", "context"}, {"cuDevicePrimaryCtx", "context"}, {"cuGreenCtx", "context"},
		{"cuDevice", "device"}, {"cuProfiler", "profiler"},
	}
	for _, r := range rules {
		if strings.HasPrefix(api, r.prefix) && has[r.cat] {
			return r.cat
		}
	}
	return "other"
}
