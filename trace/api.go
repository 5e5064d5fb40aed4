package trace

//go:generate go run ./internal/apigen

// API identifies a CUDA driver API (all exported variants of one base name,
// such as cuStreamDestroy and cuStreamDestroy_v2, share one API). The IDs are
// generated from spec/driver_apis.txt and are part of the file format.
type API uint16

// APIUnknown is the zero API.
const APIUnknown API = 0

// Category groups APIs for per-category totals.
type Category uint8

// The categories and their names are generated from the table
// (apis_gen.go).

// String returns the category's name as used in reports and the spec table.
func (c Category) String() string {
	if c < categoryLimit {
		return categoryNames[c]
	}
	return "other"
}

// Categories returns all categories in display order.
func Categories() []Category {
	out := make([]Category, 0, categoryLimit)
	for c := Category(0); c < categoryLimit; c++ {
		out = append(out, c)
	}
	return out
}

// ParseCategory returns the category with the given name.
func ParseCategory(s string) (Category, bool) { return parseName[Category](categoryNames[:], s) }

// Object is the kind of CUDA object a handle refers to. Its numbers are on
// the wire: they never change and a new kind takes the next one
// (trace/testdata/wire_numbers.txt).
type Object uint8

// The object kinds and their names are generated from the table
// (apis_gen.go).

// String returns the object kind's name.
func (o Object) String() string {
	if o < objectLimit {
		return objectNames[o]
	}
	return "-"
}

// Objects returns all object kinds but ObjectNone, in display order.
func Objects() []Object {
	out := make([]Object, 0, objectLimit)
	for o := ObjectDevice; o < objectLimit; o++ {
		out = append(out, o)
	}
	return out
}

// ParseObject returns the object kind with the given name.
func ParseObject(s string) (Object, bool) { return parseName[Object](objectNames[:], s) }

// Role says what a call does to its Handle's object.
type Role uint8

const (
	RoleNone    Role = iota
	RoleCreate       // the call makes the object (its handle is an output)
	RoleDestroy      // the call ends the object's life
	RoleRetain       // the call takes a reference (primary contexts)
	RoleRelease      // the call drops a reference
	RoleGet          // the call returns an existing object
	RoleUse          // the call uses the object
	roleLimit
)

var roleNames = [...]string{
	RoleNone:    "-",
	RoleCreate:  "create",
	RoleDestroy: "destroy",
	RoleRetain:  "retain",
	RoleRelease: "release",
	RoleGet:     "get",
	RoleUse:     "use",
}

// String returns the role's name.
func (r Role) String() string {
	if r < roleLimit {
		return roleNames[r]
	}
	return "-"
}

// ParseRole returns the role with the given name.
func ParseRole(s string) (Role, bool) { return parseName[Role](roleNames[:], s) }

// parseName returns the index of s in names as a T: the inverse of the
// String methods of the small enumerations above.
func parseName[T ~uint8](names []string, s string) (T, bool) {
	for i, n := range names {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}

// Work says whether a call queues device work or waits for it.
type Work uint8

const (
	WorkNone  Work = iota
	WorkQueue      // the call queues device work that a later synchronize waits for
	WorkWait       // the call waits for the device
)

// APIInfo describes one API: its row of spec/driver_apis.txt.
type APIInfo struct {
	Name     string   // base name, e.g. "cuStreamDestroy"
	Category Category // for per-category totals
	Object   Object   // kind of the Handle the call records
	Role     Role     // what the call does to that object
	// AuxObject and AuxRole are what the call does to a second object,
	// the one its Aux argument names (cuGraphInstantiate creates a
	// graph-exec from the graph in Aux: ObjectGraph, RoleUse), or
	// ObjectNone.
	AuxObject Object
	AuxRole   Role
	Work      Work
	// NotReadyIsAnswer says that ErrNotReady is a query's answer, not an
	// error (cuStreamQuery, cuEventQuery).
	NotReadyIsAnswer bool
	// StreamUnrecorded says that the call queues work on a stream its
	// arguments hold but its record does not (the stream column's "?":
	// cuLaunchKernelEx, whose stream is inside its config): the work's
	// stream is unknown, not the default stream (analysis.StreamOf).
	StreamUnrecorded bool
	// SimCostNs is what a call costs on the simulated driver.
	SimCostNs int64
	// Described is set when the table says more than the API's category:
	// without it the API is recorded with name, time and result only.
	Described bool
	Symbols   []string // exported variants, e.g. cuStreamDestroy, cuStreamDestroy_v2
}

// Info returns the API's description; unknown IDs get a placeholder name.
func (a API) Info() APIInfo {
	if int(a) < len(apiTable) && a != APIUnknown {
		return apiTable[a]
	}
	return APIInfo{Name: "unknown"}
}

// String returns the API's base name.
func (a API) String() string { return a.Info().Name }

// Valid reports whether a is a known API.
func (a API) Valid() bool { return a != APIUnknown && int(a) < len(apiTable) }

// APIs returns every known API in ID order.
func APIs() []API {
	out := make([]API, 0, len(apiTable))
	for i := 1; i < len(apiTable); i++ {
		out = append(out, API(i))
	}
	return out
}

// LookupAPI returns the API with the given base name or exported symbol name.
func LookupAPI(name string) (API, bool) {
	a, ok := apiBySymbol[name]
	return a, ok
}

var apiBySymbol = func() map[string]API {
	m := make(map[string]API, 2*len(apiTable))
	for i := 1; i < len(apiTable); i++ {
		m[apiTable[i].Name] = API(i)
		for _, s := range apiTable[i].Symbols {
			m[s] = API(i)
		}
	}
	return m
}()

// KeptOutsideCapture reports whether the shim records calls of this API
// outside a capture range (cuprof record --capture-range): those that change
// what the analysis knows of objects and contexts, so that what a range
// holds makes sense. They are the calls whose role creates, destroys,
// retains or releases their object, the context-stack calls (push, pop,
// set-current), the calls that bind a pool to a device (get, set) and pool
// attribute setters. The recorder hands the shim this set (CUPROF_CAPTURE_KEEP),
// and analysis marks such calls Outside when no capture range holds them.
func (a API) KeptOutsideCapture() bool {
	if !a.Valid() {
		return false
	}
	switch in := a.Info(); {
	case in.Role == RoleCreate || in.Role == RoleDestroy || in.Role == RoleRetain || in.Role == RoleRelease:
		return true
	case in.Object == ObjectPool && in.Role == RoleGet:
		return true
	}
	switch a {
	case APICtxPushCurrent, APICtxPopCurrent, APICtxSetCurrent, APIMemPoolSetAttribute, APIDeviceSetMemPool:
		return true
	}
	return false
}
