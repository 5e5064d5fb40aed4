//go:build cuprof_prebuilt

package prebuilt

import (
	"embed"
	"io/fs"
)

//go:embed all:parts
var embedded embed.FS

var parts = func() fs.FS {
	sub, err := fs.Sub(embedded, "parts")
	if err != nil {
		panic(err) // parts/ is embedded at build time
	}
	return sub
}()
