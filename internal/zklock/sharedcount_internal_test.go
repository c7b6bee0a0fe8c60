package zklock

import (
	"math"
	"testing"
)

// A node's version is an int32 that ZooKeeper lets wrap from MaxInt32 to
// MinInt32 (CURATOR-688: a SharedCount that compared versions with < never
// took a value again after the wrap). A read is older than the value held
// only if it is behind it in version order modulo 2^32.
func TestSharedCountFollowsTheVersionAcrossItsOverflow(t *testing.T) {
	tests := []struct {
		name       string
		cur, next  int32
		wantUpdate bool
	}{
		{"next version", 7, 8, true},
		{"a late read of an older version", 8, 7, false},
		{"across the overflow", math.MaxInt32, math.MinInt32, true},
		{"a few past the overflow", math.MaxInt32 - 2, math.MinInt32 + 3, true},
		{"a late read from before the overflow", math.MinInt32 + 1, math.MaxInt32, false},
		{"through -1", -2, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSharedCount(nil, "/count", 0)
			s.update(VersionedValue{Version: tt.cur, Value: 1})
			if got := s.Versioned(); got != (VersionedValue{Version: tt.cur, Value: 1}) {
				t.Fatalf("the first read, version %d, was not taken: %+v", tt.cur, got)
			}
			s.update(VersionedValue{Version: tt.next, Value: 2})
			if got := s.Versioned(); (got == VersionedValue{Version: tt.next, Value: 2}) != tt.wantUpdate {
				t.Fatalf("held %+v, then saw version %d: now %+v (want the new value: %v)", VersionedValue{tt.cur, 1}, tt.next, got, tt.wantUpdate)
			}
		})
	}
}
