package crowd

import "testing"

func TestPickerIsRepeatableSkewedAndRefusesBadSkews(t *testing.T) {
	set := make([]int32, 20)
	for i := range set {
		set[i] = int32(i + 1)
	}
	p, err := NewPicker(set, "zipf:1.1", 9)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewPicker(set, "zipf:1.1", 9)
	u, _ := NewPicker(set, "uniform", 9)
	hits, uniform := map[int32]int{}, map[int32]int{}
	for i := range 4000 {
		if p.Goods(i) != q.Goods(i) {
			t.Fatalf("buyer %d: %d then %d", i, p.Goods(i), q.Goods(i))
		}
		hits[p.Goods(i)]++
		uniform[u.Goods(i)]++
	}
	if hits[1] < 5*hits[20] {
		t.Errorf("zipf:1.1: the first goods drew %d buyers, the last %d", hits[1], hits[20])
	}
	if uniform[1] > 2*uniform[20] || uniform[20] > 2*uniform[1] {
		t.Errorf("uniform: the first goods drew %d buyers, the last %d", uniform[1], uniform[20])
	}
	for _, bad := range []string{"zipf", "zipf:0", "zipf:-1", "zipf:x", "normal", "zipf:11"} {
		if _, err := NewPicker(set, bad, 1); err == nil {
			t.Errorf("skew %s accepted", bad)
		}
	}
	if _, err := NewPicker(nil, "uniform", 1); err == nil {
		t.Error("an empty set accepted")
	}
}
