package e2e

import (
	"os"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

func TestMain(m *testing.M) { os.Exit(e2e.Main(m)) }
