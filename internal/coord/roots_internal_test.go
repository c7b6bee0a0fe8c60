package coord

import (
	"strings"
	"testing"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

func TestRootOf(t *testing.T) {
	for in, want := range map[string]string{
		"/Locks":                    "/Locks",
		"/Locks/{goodsNo}":          "/Locks",
		"/shop/locks/g-{goodsNo}/x": "/shop/locks",
		"/shop/s{stripe}":           "/shop",
		"/{goodsNo}":                "/",
	} {
		if got := RootOf(in); got != want {
			t.Errorf("RootOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// A node is the shop's when the shop may do there what it needs and
// nobody may do more than the shop's own ACL lets them.
func TestNotOwned(t *testing.T) {
	shop := append(gozk.DigestACL(zk.PermAll, "shop", "pw"), gozk.WorldACL(zk.PermRead)...)
	open := gozk.WorldACL(zk.PermAll)
	outsider := gozk.DigestACL(zk.PermAll, "outsider", "x")
	for _, tc := range []struct {
		name      string
		acl, mine []zk.ACL
		want      string // "" or a part of the reason
	}{
		{"the shop's ACL", shop, shop, ""},
		{"the shop's digest only", gozk.DigestACL(zk.PermAll, "shop", "pw"), shop, ""},
		{"open, without an identity", open, open, ""},
		{"an outsider's, with an identity", outsider, shop, "lets digest:outsider do cdrwa"},
		{"an outsider's, without an identity", outsider, open, "lets digest:outsider do cdrwa"},
		{"open, with an identity", open, shop, "lets world:anyone do cdwa"},
		{"read-only for all", gozk.WorldACL(zk.PermRead), shop, "does not let the shop's identity"},
		{"the shop may not delete", gozk.DigestACL(zk.PermAll&^zk.PermDelete, "shop", "pw"), shop, "does not let"},
	} {
		got := notOwned(tc.acl, tc.mine)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if strings.Contains(got, "pw") || strings.Contains(got, ":x") {
			t.Errorf("%s: the reason shows a password hash: %q", tc.name, got)
		}
	}
}
