package arch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTracked is the largest file the repository may track: sources, docs
// and their pictures are far below it; a compiled binary or a data dump is
// not.
const maxTracked = 2 << 20

// No compiled binary and no file over 2 MB is tracked: build outputs go to
// bin/ and out/, which .gitignore covers.
func TestNoBuildOutputIsTracked(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files (the test reads the repository's tracked files): %v", err)
	}
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(files) < 50 {
		t.Fatalf("git ls-files listed %d files: not this repository?", len(files))
	}
	magics := map[string][]byte{"ELF": []byte("\x7fELF"), "Mach-O": {0xcf, 0xfa, 0xed, 0xfe}, "PE": []byte("MZ")}
	for _, f := range files {
		p := filepath.Join(root, f)
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		if info.Size() > maxTracked {
			t.Errorf("%s is tracked and %d bytes: build outputs and data do not belong in the repository", f, info.Size())
		}
		head := make([]byte, 4)
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := fh.Read(head) // a short or empty file has no magic
		fh.Close()
		for kind, magic := range magics {
			if bytes.HasPrefix(head[:n], magic) && !strings.HasSuffix(f, ".png") {
				t.Errorf("%s is tracked and is a compiled %s binary: build it into bin/ (go build -o bin/...)", f, kind)
			}
		}
	}
}
