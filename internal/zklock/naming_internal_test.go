package zklock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSequenceKeyAndSort(t *testing.T) {
	tests := []struct {
		name, want string
		markers    []string
	}{
		{"_c_6f1e0a4e-1d3b-4c41-9b1e-2f0c0d8e9a10-lock-0000000042", "0000000042", []string{lockMarker}},
		{"lock-0000000007", "0000000007", []string{lockMarker}},
		{"foreign", "foreign", []string{lockMarker}},
		{"_c_x-__READ__0000000003", "0000000003", []string{readMarker, writeMarker}},
		{"_c_x-__WRIT__0000000004", "0000000004", []string{readMarker, writeMarker}},
		{"a-lock-b-lock-0000000001", "0000000001", []string{lockMarker}}, // the LAST marker counts
	}
	for _, tt := range tests {
		if got := sequenceKey(tt.name, tt.markers...); got != tt.want {
			t.Errorf("sequenceKey(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	names := []string{"_c_b-lock-0000000002", "_c_a-lock-0000000010", "_c_c-lock-0000000001"}
	sortNodes(names, lockMarker)
	want := []string{"_c_c-lock-0000000001", "_c_b-lock-0000000002", "_c_a-lock-0000000010"}
	if !slices.Equal(names, want) {
		t.Fatalf("sorted %v, want %v", names, want)
	}
}

func BenchmarkSortNodes200(b *testing.B) {
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("_c_6f1e0a4e-1d3b-4c41-9b1e-%012d-lock-%010d", rand.IntN(1e9), rand.IntN(1e9))
	}
	work := make([]string, len(names))
	for b.Loop() {
		copy(work, names)
		sortNodes(work, lockMarker)
	}
}

// The mutex's one-pass decision must agree with Curator's sort-then-index.
func TestExclusiveDecideMatchesSortedRule(t *testing.T) {
	r := standardRule(lockMarker, 1)
	sorted := r
	sorted.exclusive = false
	for trial := range 500 {
		// ZooKeeper never gives two children of one parent the same sequence.
		seqs := rand.Perm(50)[:1+rand.IntN(12)]
		kids := make([]string, len(seqs))
		for i, seq := range seqs {
			kids[i] = fmt.Sprintf("_c_%08d-lock-%010d", rand.IntN(1e8), seq)
		}
		name := kids[rand.IntN(len(kids))]
		f1, h1, p1, w1 := r.decide(slices.Clone(kids), name)
		f2, h2, p2, w2 := sorted.decide(slices.Clone(kids), name)
		if f1 != f2 || h1 != h2 || p1 != p2 || w1 != w2 {
			t.Fatalf("trial %d: kids %v, ours %s: one pass (%v %v %v %q) vs sorted (%v %v %v %q)", trial, kids, name, f1, h1, p1, w1, f2, h2, p2, w2)
		}
	}
	if found, _, _, _ := r.decide([]string{"a-lock-1"}, "b-lock-2"); found {
		t.Fatal("found a node that is not there")
	}
}
