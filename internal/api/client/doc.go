// Package client is the shop's HTTP API as a Go client, generated from
// internal/api/openapi.yaml by oapi-codegen (pinned below): a type per
// answer, a method per operation. TestTheGeneratedClientIsCurrent keeps it
// the description's; the e2e suite buys a piece with it.
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../openapi.yaml
