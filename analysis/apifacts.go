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
}

// apiTable holds the facts of every API by ID; IDs past it get unknownAPI's.
var apiTable = func() []apiFacts {
	apis := trace.APIs()
	t := make([]apiFacts, len(apis)+1)
	for i := range t {
		t[i] = factsFrom(trace.API(i).Info())
	}
	return t
}()

// unknownAPI is the facts of an API ID the table does not know (those of
// the placeholder trace.API.Info gives it).
var unknownAPI = factsFrom(trace.API(1 << 15).Info())

func factsFrom(info trace.APIInfo) apiFacts {
	return apiFacts{Object: info.Object, AuxObject: info.AuxObject, Role: info.Role, AuxRole: info.AuxRole,
		Category: info.Category}
}

// factsOf returns the facts of API a.
func factsOf(a trace.API) *apiFacts {
	if int(a) < len(apiTable) {
		return &apiTable[a]
	}
	return &unknownAPI
}
