package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheGeneratedClientIsCurrent generates the client again from
// ../openapi.yaml with the pinned generator (doc.go's go:generate line) and
// compares: a description changed without `go generate ./internal/api/client`
// fails here.
func TestTheGeneratedClientIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(doc), "//go:generate ")
	if !ok {
		t.Fatal("doc.go has no go:generate line")
	}
	args := strings.Fields(strings.SplitN(line, "\n", 2)[0])
	dir := t.TempDir()
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "client.gen.go")
	if err := os.WriteFile(filepath.Join(dir, "oapi-codegen.yaml"), bytes.Replace(cfg, []byte("output: client.gen.go"), []byte("output: "+out), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "oapi-codegen.yaml" {
			args[i] = filepath.Join(dir, "oapi-codegen.yaml")
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s (the generator comes from the Go module proxy)", strings.Join(args, " "), err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Error("client.gen.go is not what internal/api/openapi.yaml generates now: run go generate ./internal/api/client")
	}
}
