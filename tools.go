//go:build tools

// Package tools pins modules that Docket packages import, so go.mod keeps them while packages grow.
package tools
import (
 _ "github.com/transparency-dev/tessera"
 _ "github.com/transparency-dev/tessera/storage/posix"
 _ "github.com/transparency-dev/tessera/client"
 _ "github.com/transparency-dev/formats/log"
 _ "github.com/transparency-dev/formats/proof"
 _ "github.com/transparency-dev/merkle/proof"
 _ "golang.org/x/mod/sumdb/note"
 _ "github.com/cedar-policy/cedar-go"
 _ "github.com/cedar-policy/cedar-go/x/exp/schema/validate"
 _ "mvdan.cc/sh/v3/syntax"
 _ "modernc.org/sqlite"
 _ "github.com/rogpeppe/go-internal/testscript"
 _ "golang.org/x/sync/errgroup"
)
