package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// An option reaches the shop as its setting's environment variable, and a
// key config.yaml does not have is refused: the shop would ignore it and
// the test would run at the default.
func TestOptionsAreTheSettingsVariables(t *testing.T) {
	known := SettingKeys(t)
	env, err := optionEnv(known, []Option{
		WithStrategy("batch"),
		WithPayTimeout(time.Minute),
		WithSetting("zookeeper.retry.maxRetries", 29),
		WithEnv("GOGC=10"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SHOP_PURCHASE_STRATEGY=batch", "SHOP_ORDERS_PAYTIMEOUT=1m0s", "SHOP_ZOOKEEPER_RETRY_MAXRETRIES=29", "GOGC=10"}
	if !slices.Equal(env, want) {
		t.Errorf("environment %q, want %q", env, want)
	}
	if _, err := optionEnv(known, []Option{WithSetting("orders.payTimout", "1m")}); err == nil || !strings.Contains(err.Error(), "orders.payTimout") {
		t.Errorf("a misspelt key: %v, want an error naming it", err)
	}
}
