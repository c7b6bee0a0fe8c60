package api

import (
	"slices"
	"testing"
)

func TestParseGoodsSet(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int32
	}{
		{"7", []int32{7}},
		{"1-3", []int32{1, 2, 3}},
		{" 1-3, 10 ,2,12-12", []int32{1, 2, 3, 10, 12}},
		{"2147483647", []int32{2147483647}},
	} {
		got, err := ParseGoodsSet(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseGoodsSet(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", " ", "0", "-1", "1-", "a", "3-1", "1,,2", "2147483648", "1-2000000000", "1.5"} {
		if got, err := ParseGoodsSet(bad); err == nil {
			t.Errorf("ParseGoodsSet(%q) = %v, want an error", bad, got)
		}
	}
}
