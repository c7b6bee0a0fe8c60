package e2e

import (
	"fmt"
	"strings"
	"testing"
)

const howToStartRedis = "start it with `make stack-up` (scripts/stack.sh redis starts Debian's redis-server on " +
	"127.0.0.1:26379, without persistence)"

// Redis returns the address of the Redis server the benchmark's peer uses
// (SECKILL_TEST_REDIS; default the stack's, 127.0.0.1:26379) after checking
// that it answers PING. A server that is not there fails the test with how
// to start it.
func Redis(t testing.TB) string {
	t.Helper()
	Integration(t)
	addr := env("SECKILL_TEST_REDIS", "127.0.0.1:26379")
	if err := redisPing(addr); err != nil {
		t.Fatalf("Redis at %s is not answering (%v): %s", addr, err, howToStartRedis)
	}
	return addr
}

func redisPing(addr string) error {
	answer, err := ask(addr, "PING\r\n", 64)
	if err != nil {
		return err
	}
	if strings.TrimSpace(answer) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(answer))
	}
	return nil
}
