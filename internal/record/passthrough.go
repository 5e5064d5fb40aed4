package record

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/trace"
)

// ParsePassThrough reads --pass-through's list: API base names of the table
// (cuCtxGetDevice,cuStreamIsCapturing), comma-separated. It refuses a name
// the table lacks and an API the analysis follows objects or contexts
// through (trace.API.KeptOutsideCapture: it creates, destroys, retains or
// releases an object, or switches the context): passing those through would
// make every later call of their objects look wrong.
func ParsePassThrough(list string) ([]trace.API, error) {
	var apis []trace.API
	seen := map[trace.API]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		a, ok := trace.LookupAPI(name)
		if !ok {
			return nil, fmt.Errorf("invalid --pass-through: no driver API named %q in the API table (give base names such as cuCtxGetDevice, comma-separated)", name)
		}
		if a.KeptOutsideCapture() {
			return nil, fmt.Errorf("invalid --pass-through: %s changes what cuprof knows of objects or contexts (it creates, destroys, retains or releases one, or switches the context); pass through only calls that query or use them", a)
		}
		if !seen[a] {
			seen[a] = true
			apis = append(apis, a)
		}
	}
	if len(apis) == 0 {
		return nil, fmt.Errorf("invalid --pass-through %q: name at least one driver API, such as cuCtxGetDevice", list)
	}
	return apis, nil
}

// WithPassThrough hands calls of apis to the driver unrecorded and counts
// them per API (the shim's passthrough.c): the trace holds one count event
// per API instead of its calls, and the report lists them as passed through.
func WithPassThrough(apis []trace.API) Option {
	return optionFunc(func(cfg *config) { cfg.passThrough = append([]trace.API(nil), apis...) })
}

// passThroughEnv is CUPROF_PASS_THROUGH: the API ids, comma-separated.
func passThroughEnv(apis []trace.API) []string {
	if len(apis) == 0 {
		return nil
	}
	ids := make([]string, len(apis))
	for i, a := range apis {
		ids[i] = strconv.Itoa(int(a))
	}
	return []string{"CUPROF_PASS_THROUGH=" + strings.Join(ids, ",")}
}
