package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes r as indented JSON (see the package doc for the schema's
// conventions), followed by a newline.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
