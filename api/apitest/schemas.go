package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"
)

// schemas compiles the document's schemas once each, by JSON pointer, with
// a JSON Schema 2020-12 validator (what OpenAPI 3.1 schemas are). The test
// suites make tens of thousands of calls: openapi3filter compiles a
// schema afresh for every body it checks, which costs milliseconds a call.
type schemas struct {
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

const docURL = "file:///api/openapi.json"

func newSchemas(doc []byte) (*schemas, error) {
	var tree any
	if err := yaml.Unmarshal(doc, &tree); err != nil { // anchors and aliases resolved
		return nil, fmt.Errorf("parse api/openapi.yaml: %w", err)
	}
	raw, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml as JSON: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, v); err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml as a schema resource: %w", err)
	}
	return &schemas{compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

// pointerEscaper escapes one JSON pointer token (RFC 6901). Built once:
// built per token it was 39 % of the bytes a test process allocated
// (GuestOrderHandler's benchmark, its 1,024 checked staff calls of setup).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer escapes tokens into a JSON pointer.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// validate checks the JSON body against the schema at ptr.
func (s *schemas) validate(ptr string, body []byte) error {
	s.mu.Lock()
	sch, ok := s.compiled[ptr]
	if !ok {
		var err error
		if sch, err = s.compiler.Compile(docURL + "#" + ptr); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("compile %s: %w", ptr, err)
		}
		s.compiled[ptr] = sch
	}
	s.mu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return sch.Validate(v)
}
