package web

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of /api/v1 (docs/openapi.json is
// the same file; a test keeps both true to the routes and the answers).
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(OpenAPI)
	return nil
}
