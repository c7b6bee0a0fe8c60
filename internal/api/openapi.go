package api

import _ "embed"

// OpenAPI is the HTTP API's description, OpenAPI 3.1 (openapi.yaml, served
// at GET /openapi.yaml). TestTheOpenAPIDescriptionMatchesALiveInstance
// checks a live instance against it.
//
//go:embed openapi.yaml
var OpenAPI []byte
