package apitest

import (
	"bytes"
	"encoding/json"
)

// jsonUnmarshal decodes numbers as json.Number-free float64s, as
// openapi3filter does for bodies.
func jsonUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	return dec.Decode(v)
}
