package main

// The header side of apigen: it reads the CUDA driver's public headers
// (cuda.h, cudaProfiler.h and cudaTypedefs.h of one or more toolkit versions)
// and writes spec/cuda_functions.txt, the list of every function they
// declare with each exported ABI variant, the cuGetProcAddress lookups that
// reach it (name, version, per-thread flag) and its prototype, plus the
// typedefs those prototypes use, reduced to an ABI-equivalent vocabulary.
// The headers themselves are never committed; the list is.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// hdrFunc is one exported symbol.
type hdrFunc struct {
	Symbol  string // exported name, e.g. cuMemcpyHtoD_v2_ptds
	API     string // base name, e.g. cuMemcpyHtoD
	Params  []hdrParam
	Lookups []lookup // how cuGetProcAddress reaches it
	Legacy  bool     // declared only for the driver's own build (an older ABI entry)
	Headers string   // which header versions declare it, e.g. "12.6 13.0"
}

type hdrParam struct {
	Type string // normalised C type, e.g. "const CUDA_MEMCPY2D *"
	Name string
}

// lookup is one (name, version, flag) under which cuGetProcAddress returns
// a symbol: the PFN_<name>_v<version>[_ptds|_ptsz] typedefs of cudaTypedefs.h.
type lookup struct {
	Name    string
	Version int
	PTDS    bool
}

func (l lookup) less(m lookup) bool {
	if l.Version != m.Version {
		return l.Version < m.Version
	}
	if l.PTDS != m.PTDS {
		return !l.PTDS
	}
	return l.Name < m.Name
}

func (l lookup) String() string {
	s := l.Name + "@" + strconv.Itoa(l.Version)
	if l.PTDS {
		s += "+ptds"
	}
	return s
}

// hdrType is one typedef name the prototypes use.
type hdrType struct {
	Name string
	Kind string // scalar enum handle struct union fnptr
	C    string // scalar: the builtin type; handle, struct, union: the tag
}

// header is what one version's headers declare.
type header struct {
	Version string
	Funcs   map[string]*hdrFunc // by symbol
	Types   map[string]*typedef
	Structs map[string]bool // tags of struct/union with a body
}

// typedef is one raw typedef of the header.
type typedef struct {
	name   string
	kind   string // alias scalar enum struct union fnptr handle
	target string // alias: the other typedef name; scalar: builtin; struct/union/handle: tag
	body   bool   // a struct/union with its members here
}

var (
	reComment    = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	reDefine     = regexp.MustCompile(`^#\s*define\s+(cu\w+)\s+(?:(cu\w+)|__CUDA_API_PT(DS|SZ)\((cu\w+)\))\s*$`)
	reFuncDecl   = regexp.MustCompile(`^(?:extern\s+)?(?:__CUDA_DEPRECATED\s+)?CUresult\s+CUDAAPI\s+(cu\w+)\s*\((.*)\)$`)
	rePFN        = regexp.MustCompile(`^typedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\s*\)\s*\((.*)\)$`)
	reIdent      = regexp.MustCompile(`[A-Za-z_]\w*`)
	reABIVersion = regexp.MustCompile(`#\s*define\s+RESOURCE_ABI_VERSION\s+(\d+)`)
	reConcat     = regexp.MustCompile(`_CONCAT_OUTER\((\w+),\s*RESOURCE_ABI_VERSION\)`)
	reStatic     = regexp.MustCompile(`static\s+inline\s+CUresult\s+(cu\w+)\s*\(`)
)

// ppState tracks the preprocessor conditions around a line: whether it is
// in the driver's internal build only (__CUDA_API_VERSION_INTERNAL) and
// whether it holds only with per-thread default streams.
type ppFrame struct {
	internal, ptds, skip bool
	lp64                 bool // the condition tests for a 64-bit target: its #else is skipped
}

func condOf(expr string) ppFrame {
	var f ppFrame
	pos := func(name string) bool {
		return strings.Contains(expr, "defined("+name+")") && !strings.Contains(expr, "!defined("+name+")") ||
			strings.Contains(expr, "defined "+name)
	}
	if pos("__CUDA_API_VERSION_INTERNAL") && !strings.Contains(expr, "||") {
		f.internal = true
	}
	if pos("__CUDA_API_PER_THREAD_DEFAULT_STREAM") && !strings.Contains(expr, "||") {
		f.ptds = true
	}
	if strings.Contains(expr, "__LP64__") {
		f.lp64 = true
	}
	// Blocks for C++, other platforms or documentation only.
	if (strings.Contains(expr, "__DOXYGEN_ONLY__") || strings.Contains(expr, "__cplusplus") ||
		strings.Contains(expr, "_WIN32")) && !strings.Contains(expr, "||") && !strings.Contains(expr, "!") {
		f.skip = true
	}
	return f
}

// statement is one top-level C statement with its preprocessor context.
type statement struct {
	text     string
	internal bool
	ptds     bool
	define   bool
}

// splitStatements strips comments and splits src into preprocessor lines
// and ';'-terminated statements at brace depth 0, each with the conditions
// it is under.
func splitStatements(src string) []statement {
	src = reComment.ReplaceAllStringFunc(src, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n")) + " "
	})
	src = strings.ReplaceAll(src, "\\\n", " ")
	// cuda.h 13 names one struct through a token-pasting macro.
	if m := reABIVersion.FindStringSubmatch(src); m != nil {
		src = reConcat.ReplaceAllString(src, "${1}"+m[1])
	}
	var out []statement
	var stack []ppFrame
	ctx := func() (internal, ptds, skip bool) {
		for _, f := range stack {
			internal = internal || f.internal
			ptds = ptds || f.ptds
			skip = skip || f.skip
		}
		return
	}
	var cur strings.Builder
	depth := 0
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			d := strings.TrimSpace(strings.TrimPrefix(t, "#"))
			switch {
			case strings.HasPrefix(d, "ifdef"):
				stack = append(stack, condOf("defined("+strings.TrimSpace(d[5:])+")"))
			case strings.HasPrefix(d, "ifndef"):
				stack = append(stack, ppFrame{})
			case strings.HasPrefix(d, "if"):
				stack = append(stack, condOf(d[2:]))
			case strings.HasPrefix(d, "elif"):
				if len(stack) > 0 {
					stack[len(stack)-1] = condOf(d[4:])
				}
			case strings.HasPrefix(d, "else"):
				if len(stack) > 0 {
					// The other branch of an internal or ptds block is the
					// ordinary build.
					stack[len(stack)-1] = ppFrame{skip: stack[len(stack)-1].lp64}
				}
			case strings.HasPrefix(d, "endif"):
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			case strings.HasPrefix(d, "define"):
				in, pt, skip := ctx()
				if !skip {
					out = append(out, statement{text: "#" + d, internal: in, ptds: pt, define: true})
				}
			}
			continue
		}
		if _, _, skip := ctx(); skip {
			continue
		}
		for _, r := range line {
			switch r {
			case '{':
				depth++
			case '}':
				if depth > 0 {
					depth--
				}
			}
			if r == ';' && depth == 0 {
				in, pt, skip := ctx()
				s := strings.Join(strings.Fields(cur.String()), " ")
				if s != "" && !skip {
					out = append(out, statement{text: s, internal: in, ptds: pt})
				}
				cur.Reset()
				continue
			}
			cur.WriteRune(r)
		}
		cur.WriteByte('\n')
	}
	return out
}

// parseParams splits a C parameter list into normalised types and names.
func parseParams(list string) ([]hdrParam, error) {
	list = strings.TrimSpace(list)
	if list == "void" || list == "" {
		return nil, nil
	}
	var out []hdrParam
	for i, p := range splitTop(list) {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			return nil, fmt.Errorf("empty parameter %d in %q", i, list)
		}
		if strings.Contains(p, "(") {
			return nil, fmt.Errorf("parameter %q: function pointer parameters need a typedef", p)
		}
		arr := false
		if j := strings.Index(p, "["); j >= 0 {
			if !strings.HasSuffix(p, "]") {
				return nil, fmt.Errorf("parameter %q: bad array", p)
			}
			p = strings.TrimSpace(p[:j])
			arr = true
		}
		// The name is the last identifier unless the parameter is a bare
		// type (a builtin word or a star last).
		ids := reIdent.FindAllStringIndex(p, -1)
		if len(ids) == 0 {
			return nil, fmt.Errorf("parameter %q has no type", p)
		}
		last := ids[len(ids)-1]
		name := p[last[0]:last[1]]
		typ := strings.TrimSpace(p[:last[0]])
		if typ == "" || strings.HasSuffix(p, "*") || isTypeWord(name) && !strings.HasSuffix(typ, "*") && len(ids) == 1 {
			typ, name = p, fmt.Sprintf("p%d", i)
		} else if isTypeWord(name) && (typ == "unsigned" || typ == "signed" || typ == "const" || typ == "long" || typ == "unsigned long" || typ == "const unsigned") {
			typ, name = p, fmt.Sprintf("p%d", i)
		}
		if arr {
			typ += " *"
		}
		out = append(out, hdrParam{Type: normType(typ), Name: name})
	}
	return out, nil
}

func isTypeWord(w string) bool {
	switch w {
	case "void", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "size_t", "const":
		return true
	}
	return false
}

// splitTop splits on commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// normType puts one space between words and stars: "const char *", "void **".
func normType(t string) string {
	t = strings.ReplaceAll(t, "*", " * ")
	f := strings.Fields(t)
	// "CUlaunchConfig const *" is "const CUlaunchConfig *".
	for i := 1; i < len(f); i++ {
		if f[i] == "const" && f[i-1] != "*" && f[0] != "const" {
			f = append([]string{"const"}, append(f[:i:i], f[i+1:]...)...)
		}
	}
	s := strings.Join(f, " ")
	return strings.ReplaceAll(s, "* *", "**")
}

// parseTypedef reads one typedef statement (text after "typedef").
func parseTypedef(s string) (*typedef, error) {
	body := strings.TrimSpace(strings.TrimPrefix(s, "typedef"))
	if i := strings.Index(body, "{"); i >= 0 {
		j := strings.LastIndex(body, "}")
		if j < i {
			return nil, fmt.Errorf("typedef %q: unbalanced braces", s)
		}
		head := strings.Fields(body[:i])
		rest := strings.TrimSpace(body[j+1:])
		names := strings.Split(rest, ",")
		name := strings.TrimSpace(names[0])
		name = strings.TrimSpace(strings.TrimPrefix(name, "CUDA_ALIGN(8)"))
		if !reIdent.MatchString(name) || len(head) == 0 {
			return nil, fmt.Errorf("typedef %q: no name", s)
		}
		if m := reIdent.FindString(name); m != name {
			name = lastIdent(name)
		}
		td := &typedef{name: name, kind: head[0], body: true}
		if len(head) > 1 {
			td.target = head[1]
		}
		switch td.kind {
		case "enum":
		case "struct", "union":
			if td.target == "" {
				td.target = name + "_anon"
			}
		default:
			return nil, fmt.Errorf("typedef %q: unknown body kind %q", s, td.kind)
		}
		return td, nil
	}
	if strings.Contains(body, "(") {
		// A function pointer: RET (CUDA_CB *NAME)(...).
		i := strings.Index(body, "(")
		j := strings.Index(body[i:], ")")
		if j < 0 {
			return nil, fmt.Errorf("typedef %q: bad function pointer", s)
		}
		inner := body[i+1 : i+j]
		if !strings.Contains(inner, "*") {
			return nil, fmt.Errorf("typedef %q: a function type, not a pointer", s)
		}
		return &typedef{name: lastIdent(inner), kind: "fnptr"}, nil
	}
	f := strings.Fields(strings.ReplaceAll(body, "*", " * "))
	if len(f) < 2 {
		return nil, fmt.Errorf("typedef %q: too short", s)
	}
	name := f[len(f)-1]
	f = f[:len(f)-1]
	if !reIdent.MatchString(name) {
		return nil, fmt.Errorf("typedef %q: bad name", s)
	}
	switch {
	case (f[0] == "struct" || f[0] == "union") && len(f) == 3 && f[2] == "*":
		return &typedef{name: name, kind: "handle", target: f[1]}, nil
	case (f[0] == "struct" || f[0] == "union") && len(f) == 2:
		return &typedef{name: name, kind: f[0], target: f[1]}, nil
	case f[0] == "enum" && len(f) == 2:
		return &typedef{name: name, kind: "enum"}, nil
	case len(f) == 1 && !isTypeWord(f[0]) && f[0] != "uint32_t" && f[0] != "uint64_t":
		return &typedef{name: name, kind: "alias", target: f[0]}, nil
	}
	for _, w := range f {
		if !isTypeWord(w) && w != "uint32_t" && w != "uint64_t" && w != "unsigned" {
			return nil, fmt.Errorf("typedef %q: not a scalar", s)
		}
	}
	return &typedef{name: name, kind: "scalar", target: strings.Join(f, " ")}, nil
}

func lastIdent(s string) string {
	ids := reIdent.FindAllString(s, -1)
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

// parseHeader reads one version's headers: cuda.h and cudaProfiler.h
// (declarations) and cudaTypedefs.h (lookup versions).
func parseHeader(version string, decls []string, typedefs string) (*header, error) {
	h := &header{Version: version, Funcs: map[string]*hdrFunc{}, Types: map[string]*typedef{}, Structs: map[string]bool{}}
	type decl struct {
		name     string
		params   []hdrParam
		internal bool
	}
	var ds []decl
	plain := map[string]string{}  // macro name -> symbol in the ordinary build
	ptdsOf := map[string]string{} // macro name -> symbol with per-thread default streams
	static := map[string]bool{}
	for _, src := range decls {
		for _, m := range reStatic.FindAllStringSubmatch(src, -1) {
			static[m[1]] = true
		}
		for _, st := range splitStatements(src) {
			if st.define {
				m := reDefine.FindStringSubmatch(st.text)
				if m == nil || st.internal {
					continue
				}
				if m[2] != "" {
					if st.ptds {
						ptdsOf[m[1]] = m[2]
					} else {
						plain[m[1]] = m[2]
					}
					continue
				}
				target := m[4]
				suffix := "_ptds"
				if m[3] == "SZ" {
					suffix = "_ptsz"
				}
				if !st.ptds {
					plain[m[1]] = target
				}
				ptdsOf[m[1]] = target + suffix
				continue
			}
			t := st.text
			if strings.HasPrefix(t, "typedef ") {
				if rePFN.MatchString(t) {
					continue
				}
				td, err := parseTypedef(t)
				if err != nil {
					if strings.Contains(t, "CUDAAPI") || strings.Contains(t, "CUDA_CB") || strings.Contains(t, "__") {
						continue // not a type the driver's prototypes use
					}
					return nil, err
				}
				if td.body && (td.kind == "struct" || td.kind == "union") {
					h.Structs[td.target] = true
				}
				if prev, ok := h.Types[td.name]; !ok || !prev.body {
					h.Types[td.name] = td
				}
				continue
			}
			if strings.HasPrefix(t, "struct ") && strings.Contains(t, "{") {
				h.Structs[strings.Fields(t)[1]] = true
				continue
			}
			m := reFuncDecl.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			ps, err := parseParams(m[2])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m[1], err)
			}
			ds = append(ds, decl{m[1], ps, st.internal})
		}
	}
	declared := map[string]bool{}
	for _, d := range ds {
		if !d.internal {
			declared[d.name] = true
		}
	}
	add := func(sym, api string, ps []hdrParam, legacy, exact bool) {
		if static[sym] {
			return
		}
		if f, ok := h.Funcs[sym]; ok {
			if exact && f.API != api {
				f.API = api
			}
			return
		}
		h.Funcs[sym] = &hdrFunc{Symbol: sym, API: api, Params: ps, Legacy: legacy, Headers: version}
	}
	// Declarations under their own name first, so that a symbol that is
	// also a macro's target (cuGraphInstantiateWithFlags) keeps its API.
	for _, d := range ds {
		if !d.internal && plain[d.name] == "" {
			add(d.name, d.name, d.params, false, true)
		}
	}
	for _, d := range ds {
		if d.internal {
			add(d.name, baseOf(d.name, declared), d.params, true, false)
			continue
		}
		sym := d.name
		if p := plain[d.name]; p != "" {
			sym = p
		}
		add(sym, d.name, d.params, false, false)
		if p := ptdsOf[d.name]; p != "" && p != sym {
			add(p, d.name, d.params, false, false)
		}
	}
	// A legacy declaration under the same name as an ordinary one (both
	// cuStreamDestroy) is the older entry point; the ordinary one is
	// exported under the macro's name.
	if err := h.assignLookups(typedefs); err != nil {
		return nil, err
	}
	return h, nil
}

var reSuffix = regexp.MustCompile(`(_v\d+|_ptds|_ptsz)$`)

// baseOf strips ABI suffixes until a declared base name remains.
func baseOf(name string, declared map[string]bool) string {
	n := name
	for {
		m := reSuffix.FindStringIndex(n)
		if m == nil {
			return name
		}
		n = n[:m[0]]
		if declared[n] {
			return n
		}
	}
}

// suffixRank orders the variants of one name: base, _v2, _v3, ...
func suffixRank(sym, base string) int {
	rest := strings.TrimPrefix(sym, base)
	rest = strings.TrimSuffix(strings.TrimSuffix(rest, "_ptds"), "_ptsz")
	if rest == "" {
		return 1
	}
	if strings.HasPrefix(rest, "_v") {
		if n, err := strconv.Atoi(rest[2:]); err == nil {
			return n
		}
	}
	return 1000
}

func isPTDS(sym string) bool {
	return strings.HasSuffix(sym, "_ptds") || strings.HasSuffix(sym, "_ptsz")
}

// abiSig is a parameter list reduced to ABI classes, for matching a PFN
// typedef with the symbol it describes.
func (h *header) abiSig(ps []hdrParam) string {
	var b []string
	for _, p := range ps {
		b = append(b, h.abiClass(p.Type))
	}
	return strings.Join(b, ",")
}

func (h *header) abiClass(t string) string {
	if strings.HasSuffix(t, "*") {
		return "ptr"
	}
	f := strings.Fields(t)
	for len(f) > 0 && f[0] == "const" {
		f = f[1:]
	}
	if len(f) == 1 && !isTypeWord(f[0]) {
		ty, err := h.resolve(f[0])
		if err != nil {
			return "?" + f[0]
		}
		switch ty.Kind {
		case "handle", "fnptr":
			return "ptr"
		case "enum":
			return "i32"
		case "struct", "union":
			return "struct:" + ty.C
		}
		return scalarClass(ty.C)
	}
	return scalarClass(strings.Join(f, " "))
}

func scalarClass(c string) string {
	switch c {
	case "unsigned long long", "long long", "size_t", "uint64_t", "unsigned long", "long":
		return "i64"
	case "float":
		return "f32"
	case "double":
		return "f64"
	}
	return "i32"
}

// resolve follows typedef aliases to a type of the vocabulary.
func (h *header) resolve(name string) (hdrType, error) {
	switch name {
	case "uint32_t", "cuuint32_t":
		return hdrType{Name: name, Kind: "scalar", C: "uint32_t"}, nil
	case "uint64_t", "cuuint64_t":
		return hdrType{Name: name, Kind: "scalar", C: "uint64_t"}, nil
	case "size_t":
		return hdrType{Name: name, Kind: "scalar", C: "size_t"}, nil
	}
	n := name
	for i := 0; i < 16; i++ {
		td, ok := h.Types[n]
		if !ok {
			return hdrType{}, fmt.Errorf("type %s (from %s) is not declared", n, name)
		}
		switch td.kind {
		case "alias":
			if td.target == "uint32_t" || td.target == "uint64_t" || td.target == "cuuint32_t" || td.target == "cuuint64_t" {
				t, err := h.resolve(td.target)
				t.Name = name
				return t, err
			}
			n = td.target
			continue
		case "scalar":
			return hdrType{Name: name, Kind: "scalar", C: td.target}, nil
		case "enum":
			return hdrType{Name: name, Kind: "enum", C: "int"}, nil
		case "fnptr":
			return hdrType{Name: name, Kind: "fnptr"}, nil
		case "handle":
			return hdrType{Name: name, Kind: "handle", C: td.target}, nil
		case "struct", "union":
			return hdrType{Name: name, Kind: td.kind, C: td.target}, nil
		}
	}
	return hdrType{}, fmt.Errorf("type %s: typedef loop", name)
}

// assignLookups reads the PFN typedefs: for each (name, version, flag) the
// symbol it returns, matched by ABI signature among the name's variants
// (lowest variant first for the lowest version).
func (h *header) assignLookups(typedefs string) error {
	type pfn struct {
		name    string
		version int
		ptds    bool
		sig     string
	}
	var pfns []pfn
	for _, st := range splitStatements(typedefs) {
		m := rePFN.FindStringSubmatch(st.text)
		if m == nil {
			continue
		}
		v, _ := strconv.Atoi(m[2])
		ps, err := parseParams(m[4])
		if err != nil {
			return fmt.Errorf("PFN_%s_v%s: %w", m[1], m[2], err)
		}
		pfns = append(pfns, pfn{m[1], v, m[3] != "", h.abiSig(ps)})
	}
	sort.SliceStable(pfns, func(i, j int) bool {
		if pfns[i].name != pfns[j].name {
			return pfns[i].name < pfns[j].name
		}
		return pfns[i].version < pfns[j].version
	})
	byAPI := map[string][]*hdrFunc{}
	for _, f := range h.Funcs {
		byAPI[f.API] = append(byAPI[f.API], f)
	}
	used := map[string]bool{}
	for _, p := range pfns {
		cands := append([]*hdrFunc(nil), byAPI[p.name]...)
		sort.Slice(cands, func(i, j int) bool {
			ri, rj := suffixRank(cands[i].Symbol, p.name), suffixRank(cands[j].Symbol, p.name)
			if ri != rj {
				return ri < rj
			}
			return cands[i].Symbol < cands[j].Symbol
		})
		var pick *hdrFunc
		for pass := 0; pass < 2 && pick == nil; pass++ {
			for _, c := range cands {
				if isPTDS(c.Symbol) != p.ptds || h.abiSig(c.Params) != p.sig {
					continue
				}
				if pass == 0 && used[c.Symbol] {
					continue
				}
				pick = c
				break
			}
		}
		if pick == nil {
			// A name that cuGetProcAddress maps to another API's
			// symbol (cuGraphInstantiate at 12000 is
			// cuGraphInstantiateWithFlags): the ordinary build's macro
			// target with the same signature.
			for _, f := range h.Funcs {
				if !f.Legacy && isPTDS(f.Symbol) == p.ptds && h.abiSig(f.Params) == p.sig &&
					strings.HasPrefix(f.Symbol, p.name) {
					pick = f
					break
				}
			}
		}
		if pick == nil {
			continue // a lookup whose function this header does not declare
		}
		used[pick.Symbol] = true
		pick.Lookups = append(pick.Lookups, lookup{p.name, p.version, p.ptds})
	}
	// A symbol's API is the name cuGetProcAddress first reached it by when
	// that name is the symbol or its base (cuCtxGetDevice_v2 is
	// cuCtxGetDevice's; cuGraphInstantiateWithFlags is its own, though
	// cuda.h declares it as cuGraphInstantiate).
	for _, f := range h.Funcs {
		if len(f.Lookups) == 0 {
			continue
		}
		sort.Slice(f.Lookups, func(i, j int) bool { return f.Lookups[i].less(f.Lookups[j]) })
		first := f.Lookups[0].Name
		if first == f.Symbol || strings.HasPrefix(f.Symbol, first+"_") && reSuffix.MatchString(f.Symbol) {
			f.API = first
		}
	}
	return nil
}

// headerSet is the union of several versions' headers: every symbol any of
// them declares (a program built against an older toolkit still calls the
// functions a newer one dropped, and the driver still exports them), with
// the prototype and lookups of the newest version that declares it.
type headerSet struct {
	Funcs []*hdrFunc // by symbol
	Types []hdrType  // by name: every type a prototype names
}

// unionHeaders merges the versions, newest first in hs.
func unionHeaders(hs []*header) (*headerSet, error) {
	bySym := map[string]*hdrFunc{}
	var order []string
	// A lookup returns one symbol: the newest header that names it decides
	// which (cuDeviceGetUuid at 11040 is cuDeviceGetUuid_v2 in 13.0, while
	// 12.6's version table cannot tell it from the older entry).
	taken := map[lookup]bool{}
	for _, h := range hs {
		var mine []lookup
		for sym, f := range h.Funcs {
			if prev, ok := bySym[sym]; ok {
				prev.Headers = prev.Headers + " " + h.Version
				for _, l := range f.Lookups {
					if !taken[l] {
						prev.Lookups = append(prev.Lookups, l)
						mine = append(mine, l)
					}
				}
				sort.Slice(prev.Lookups, func(i, j int) bool { return prev.Lookups[i].less(prev.Lookups[j]) })
				continue
			}
			c := *f
			c.Lookups = nil
			for _, l := range f.Lookups {
				if !taken[l] {
					c.Lookups = append(c.Lookups, l)
					mine = append(mine, l)
				}
			}
			bySym[sym] = &c
			order = append(order, sym)
		}
		for _, l := range mine {
			taken[l] = true
		}
	}
	sort.Strings(order)
	s := &headerSet{}
	types := map[string]hdrType{}
	for _, sym := range order {
		f := bySym[sym]
		s.Funcs = append(s.Funcs, f)
		for _, p := range f.Params {
			name := typeName(p.Type)
			if name == "" {
				continue
			}
			if _, ok := types[name]; ok {
				continue
			}
			var ty hdrType
			var err error
			for _, h := range hs {
				if ty, err = h.resolve(name); err == nil {
					break
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sym, err)
			}
			types[name] = ty
		}
	}
	for _, t := range types {
		s.Types = append(s.Types, t)
	}
	sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Name < s.Types[j].Name })
	return s, nil
}

// typeName is the typedef name a parameter type uses, or "" for builtins.
func typeName(t string) string {
	for _, w := range strings.Fields(t) {
		if w == "const" || w == "*" || w == "**" || isTypeWord(w) {
			continue
		}
		return w
	}
	return ""
}

// prototype renders a function's parameter list.
func (f *hdrFunc) prototype() string {
	if len(f.Params) == 0 {
		return "void"
	}
	var ps []string
	for _, p := range f.Params {
		t := p.Type
		if strings.HasSuffix(t, "*") {
			ps = append(ps, t+p.Name)
		} else {
			ps = append(ps, t+" "+p.Name)
		}
	}
	return strings.Join(ps, ", ")
}

const functionsHeader = `# Every function the CUDA driver's headers declare: generated by
#   go run ./trace/internal/apigen -headers 13.0=DIR,12.6=DIR -functions trace/spec/cuda_functions.txt
# from cuda.h, cudaProfiler.h, cudaTypedefs.h and cudaProfilerTypedefs.h of each
# toolkit version (the headers are not committed). It is the union of the
# versions: a symbol any of them declares is here (programs built against an
# older toolkit still call what a newer one dropped, and drivers keep exporting
# it), with the prototype of the newest version that declares it.
#
# func lines: symbol | api | lookups | flags | headers | parameters
#   symbol   the exported name (one ABI variant)
#   api      the base name it is an ABI variant of (one API id)
#   lookups  the (name@version, +ptds with the per-thread default stream flag)
#            at which cuGetProcAddress returns this symbol: the PFN_<name>_v<version>
#            typedefs of cudaTypedefs.h; the lowest version introduced the variant
#   flags    legacy: declared only for the driver's own build (an older ABI entry)
#   headers  the toolkit versions whose headers declare it
# type lines: type | name | kind | C
#   every typedef name a parameter uses, reduced to the ABI-equivalent
#   vocabulary the generated C uses instead of cuda.h: scalar (its builtin
#   type), enum (int), handle (a pointer to the struct tag), struct or union
#   (the tag; by pointer only, unless cuprof_cuda.h defines its layout),
#   fnptr (a function pointer).
`

func (s *headerSet) format() []byte {
	var b strings.Builder
	b.WriteString(functionsHeader)
	for _, f := range s.Funcs {
		var ls []string
		for _, l := range f.Lookups {
			ls = append(ls, l.String())
		}
		lk := strings.Join(ls, " ")
		if lk == "" {
			lk = "-"
		}
		fl := "-"
		if f.Legacy {
			fl = "legacy"
		}
		fmt.Fprintf(&b, "func | %s | %s | %s | %s | %s | %s\n", f.Symbol, f.API, lk, fl, f.Headers, f.prototype())
	}
	for _, t := range s.Types {
		c := t.C
		if c == "" {
			c = "-"
		}
		fmt.Fprintf(&b, "type | %s | %s | %s\n", t.Name, t.Kind, c)
	}
	return []byte(b.String())
}

// parseFunctions reads spec/cuda_functions.txt back.
func parseFunctions(data []byte) (*headerSet, error) {
	s := &headerSet{}
	seen := map[string]bool{}
	types := map[string]bool{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		switch f[0] {
		case "func":
			if len(f) != 7 {
				return nil, fmt.Errorf("functions line %d: %d fields, want 7", n+1, len(f))
			}
			if !reSymbol.MatchString(f[1]) || !reSymbol.MatchString(f[2]) {
				return nil, fmt.Errorf("functions line %d: bad symbol %q or api %q", n+1, f[1], f[2])
			}
			if seen[f[1]] {
				return nil, fmt.Errorf("functions line %d: %s listed twice", n+1, f[1])
			}
			seen[f[1]] = true
			fn := &hdrFunc{Symbol: f[1], API: f[2], Legacy: f[4] == "legacy", Headers: f[5]}
			if f[3] != "-" {
				for _, l := range strings.Fields(f[3]) {
					lk, err := parseLookup(l)
					if err != nil {
						return nil, fmt.Errorf("functions line %d: %w", n+1, err)
					}
					fn.Lookups = append(fn.Lookups, lk)
				}
			}
			ps, err := parseParams(f[6])
			if err != nil {
				return nil, fmt.Errorf("functions line %d: %w", n+1, err)
			}
			fn.Params = ps
			s.Funcs = append(s.Funcs, fn)
		case "type":
			if len(f) != 4 {
				return nil, fmt.Errorf("functions line %d: %d fields, want 4", n+1, len(f))
			}
			switch f[2] {
			case "scalar", "enum", "handle", "struct", "union", "fnptr":
			default:
				return nil, fmt.Errorf("functions line %d: unknown type kind %q", n+1, f[2])
			}
			if !reIdentFull.MatchString(f[1]) || types[f[1]] {
				return nil, fmt.Errorf("functions line %d: bad or repeated type name %q", n+1, f[1])
			}
			types[f[1]] = true
			c := f[3]
			if c == "-" {
				c = ""
			}
			s.Types = append(s.Types, hdrType{Name: f[1], Kind: f[2], C: c})
		default:
			return nil, fmt.Errorf("functions line %d: starts with %q, want func or type", n+1, f[0])
		}
	}
	for _, fn := range s.Funcs {
		for _, p := range fn.Params {
			if n := typeName(p.Type); n != "" && !types[n] {
				return nil, fmt.Errorf("functions: %s uses type %s, which no type line names", fn.Symbol, n)
			}
		}
	}
	return s, nil
}

var (
	reSymbol    = regexp.MustCompile(`^cu[A-Za-z0-9_]+$`)
	reIdentFull = regexp.MustCompile(`^[A-Za-z_]\w*$`)
	reLookup    = regexp.MustCompile(`^(cu\w+)@(\d+)(\+ptds)?$`)
)

func parseLookup(s string) (lookup, error) {
	m := reLookup.FindStringSubmatch(s)
	if m == nil {
		return lookup{}, fmt.Errorf("bad lookup %q (want name@version or name@version+ptds)", s)
	}
	v, err := strconv.Atoi(m[2])
	if err != nil || v <= 0 || v > 1000000 {
		return lookup{}, fmt.Errorf("bad lookup version in %q", s)
	}
	return lookup{m[1], v, m[3] != ""}, nil
}
