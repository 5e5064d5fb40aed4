package analysis

import "github.com/cuprof/cuprof/trace"

// apiFacts is what the replay reads of an API's trace.APIInfo. API.Info
// returns the whole description by value (72 bytes, with the name and the
// symbols), and the replay asked for it several times a call: a table of
// these, by API, is read in place.
type apiFacts struct {
	Object, AuxObject trace.Object
	Role, AuxRole     trace.Role
	Category          trace.Category
	// what the replay may do for a successful call of the API, so that
	// Step calls bind and stepContexts only for those that may do
	// something (two calls less for most calls)
	binds    bool // bind may bind a device to an object
	unbinds  bool // a destroy: unbind moves its object's binding among the destroyed
	contexts bool // stepContexts may change the thread's context stack
}

// apiTable holds the facts of every API by ID; IDs past it get unknownAPI's.
var apiTable = func() []apiFacts {
	apis := trace.APIs()
	t := make([]apiFacts, len(apis)+1)
	for i := range t {
		t[i] = factsFrom(trace.API(i))
	}
	return t
}()

// unknownAPI is the facts of an API ID the table does not know (those of
// the placeholder trace.API.Info gives it).
var unknownAPI = factsFrom(trace.API(1 << 15))

func factsFrom(a trace.API) apiFacts {
	info := a.Info()
	f := apiFacts{Object: info.Object, AuxObject: info.AuxObject, Role: info.Role, AuxRole: info.AuxRole,
		Category: info.Category}
	// bind's cases
	f.binds = a == trace.APIDevicePrimaryCtxRetain || a == trace.APICtxCreate || a == trace.APICtxGetDevice ||
		f.Role == trace.RoleCreate || (f.Role == trace.RoleGet && (f.Object == trace.ObjectPool || madeByGet(&f)))
	f.unbinds = !f.binds && f.Role == trace.RoleDestroy && f.Object != trace.ObjectNone
	// stepContexts' cases
	switch a {
	case trace.APICtxCreate, trace.APICtxPushCurrent, trace.APICtxPopCurrent, trace.APICtxSetCurrent,
		trace.APICtxGetCurrent, trace.APICtxDestroy, trace.APIDevicePrimaryCtxRelease, trace.APIDevicePrimaryCtxReset:
		f.contexts = true
	}
	return f
}

// factsOf returns the facts of API a.
func factsOf(a trace.API) *apiFacts {
	if int(a) < len(apiTable) {
		return &apiTable[a]
	}
	return &unknownAPI
}
