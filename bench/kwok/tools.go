//go:build tools

// Package tools keeps kwok's command in this module's graph, so that `go build` of it uses the
// versions go.sum pins.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
