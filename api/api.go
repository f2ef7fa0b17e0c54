// Package api holds the project's HTTP contract, api/openapi.yaml, embedded
// so every box serves it (GET /api/openapi.yaml) and the tests check every
// request and response they make against it (api/apitest).
package api

import _ "embed"

// Path is where every box serves the document.
const Path = "/api/openapi.yaml"

// ContentType is the document's media type (RFC 9512).
const ContentType = "application/yaml"

// Document is api/openapi.yaml as built into the binary.
//
//go:embed openapi.yaml
var Document []byte
