package auth_test

import (
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/auth"
)

// What a person types is weak, whatever its length; what a generator
// makes is not.
func TestWeakSecrets(t *testing.T) {
	for secret, weak := range map[string]bool{
		strings.Repeat("a", 64):                        true,
		strings.Repeat("ab", 32):                       true,
		strings.Repeat("password", 4):                  true,  // 7 distinct bytes
		"UFltCCeUBM6SBqzGEEH8PbRi1h1o5AWevGprmVitHxtO": false, // openssl rand -base64 33
		"6d9ee17ea6c807ed4975a1f3b2c1d0e9":             false, // 32 hex digits
	} {
		if got := auth.Weak([]byte(secret)) != nil; got != weak {
			t.Errorf("Weak(%.16q…) = %v, want %v", secret, got, weak)
		}
	}
}
