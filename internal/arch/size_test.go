package arch

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// maxLines is the most lines a non-test Go file may have: past it a file
// holds more than one thing a newcomer reads end to end, and is split by
// what it does (a strategy's lease beside its sale, a batch's writes beside
// its choice).
const maxLines = 450

// generated matches the line by which Go marks a generated file (go help
// generate): such a file is the generator's, not a newcomer's read.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestNoFileIsTooLong reads every non-test Go file of the module but the
// generated ones.
func TestNoFileIsTooLong(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := walkGoFiles(root, func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if n := bytes.Count(b, []byte("\n")); n > maxLines && !generated.Match(b) {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s has %d lines, over %d: split it by what its parts do", rel, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files: the walk lost them", files)
	}
}
