package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Every command's --help exits 0 and lists its own flags, typed, and no
// other command's.
func TestEveryCommandsHelpListsItsOwnFlags(t *testing.T) {
	for _, tt := range []struct {
		args         []string
		want, absent []string
	}{
		{[]string{"--help"}, []string{"serve", "migrate", "stock", "probe"}, []string{"--server.addr"}},
		{[]string{"serve", "--help"}, []string{"--server.addr string", "--lock.enabled ", "--demo.maxSleep duration", "--purchase.batchMax int", "Examples:"},
			[]string{"--lock.enabled string", "--goods"}},
		{[]string{"migrate", "--help"}, []string{"--mysql.dsn string", "status", "Examples:"}, []string{"--server.addr", "--lock.enabled", "--goods"}},
		{[]string{"migrate", "status", "--help"}, []string{"--mysql.dsn string"}, []string{"--server.addr", "--goods"}},
		{[]string{"stock", "set", "--help"}, []string{"--goods string", "--stock int32", "--clear-orders ", "--start string", "--end string", "--mysql.dsn string", "Examples:"},
			[]string{"--server.addr", "--lock.enabled", "--demo.maxSleep"}},
		{[]string{"probe", "--help"}, []string{"probe URL", "Examples:"}, []string{"--mysql.dsn", "--server.addr"}},
		{[]string{"help", "stock", "set"}, []string{"--goods string"}, []string{"--server.addr"}},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, map[string]string{}, &out, &errOut)
		if err != nil {
			t.Errorf("shop %s: %v, want exit 0\n%s", strings.Join(tt.args, " "), err, errOut.String())
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("shop %s lacks %q:\n%s", strings.Join(tt.args, " "), w, out.String())
			}
		}
		for _, a := range tt.absent {
			if strings.Contains(out.String(), a) {
				t.Errorf("shop %s lists %q, another command's:\n%s", strings.Join(tt.args, " "), a, out.String())
			}
		}
	}
}

// Mistakes on the command line are usage errors (exit 2) that say what to
// run; none reaches a server.
func TestCommandLineMistakesAreUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "shop --help"},
		{[]string{"serv"}, "did you mean serve?"},
		{[]string{"stock"}, "set, list or remove"},
		{[]string{"stock", "remove"}, "stock remove needs --goods"},
		{[]string{"stock", "set"}, "--stock M"},
		{[]string{"stock", "set", "--stock", "-5"}, "--stock -5: a stock is 0 or more"},
		{[]string{"stock", "set", "--goods", "0", "--stock", "1"}, `--goods: goods "0": want positive 32-bit numbers`},
		{[]string{"stock", "set", "--goods", "5-1", "--stock", "1"}, `--goods: goods range "5-1" runs backwards`},
		{[]string{"stock", "set", "--goods", "abc", "--stock", "1"}, `--goods: goods "abc"`},
		{[]string{"stock", "set", "--goods", "1-100001", "--stock", "1"}, "more than 100000 goods in one set (--max-goods raises the bound)"},
		{[]string{"stock", "set", "--goods", "1-20", "--stock", "1", "--max-goods", "10"}, "more than 10 goods"},
		{[]string{"stock", "set", "--stock", "1", "--end", "soon"}, "--end"},
		{[]string{"serve", "--lock.enabled=maybe"}, "lock.enabled"},
		{[]string{"serve", "--demo.maxSleep", "soon"}, "demo.maxSleep"},
		{[]string{"serve", "--purchase.maxWaiting", "abc"}, `purchase.maxWaiting (--purchase.maxWaiting): "abc" is not a positive integer`},
		{[]string{"migrate", "--server.addr", ":1"}, "unknown flag: --server.addr"},
		{[]string{"serve", "--lock.enabld=false"}, "unknown flag: --lock.enabld; did you mean --lock.enabled?"},
		{[]string{"migrate", "up"}, `unknown command "up"`},
		{[]string{"probe"}, "one URL"},
		{[]string{"probe", "a", "b"}, "one URL"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, map[string]string{}, &out, &errOut)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("shop %s: %v, want a usage error saying %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// A bad value given as a flag is reported under the flag, not under the
// environment variable the user did not set.
func TestABadFlagValueIsNamedAsAFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--purchase.maxWaiting=0"}, map[string]string{}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "purchase.maxWaiting (--purchase.maxWaiting)") || strings.Contains(err.Error(), "SHOP_") {
		t.Fatalf("shop serve --purchase.maxWaiting=0: %v, want the flag named", err)
	}
}

// A server that is not there is named with the key and the command that
// fix it, and a wait for ZooKeeper says so while it lasts.
func TestMissingServersAreNamedWithTheirFix(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"migrate"}, map[string]string{
		"SHOP_MYSQL_DSN": "seckill:seckill@tcp(" + e2e.ClosedAddr(t) + ")/seckill", "SHOP_CONFIG": "../../config.yaml"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "mysql.dsn (SHOP_MYSQL_DSN") || !strings.Contains(err.Error(), "make stack-up") {
		t.Errorf("MySQL not there: %v, want the key and make stack-up", err)
	}

	errOut.Reset()
	err = run(context.Background(), []string{"serve", "--server.addr", "127.0.0.1:0"}, map[string]string{
		"SHOP_MYSQL_DSN": e2e.Database(t), "SHOP_CONFIG": "../../config.yaml",
		"SHOP_ZOOKEEPER_SERVERS": e2e.ClosedAddr(t), "SHOP_ZOOKEEPER_CONNECTIONTIMEOUT": "6s"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "zookeeper.servers (SHOP_ZOOKEEPER_SERVERS") || !strings.Contains(err.Error(), "make stack-up") {
		t.Errorf("ZooKeeper not there: %v, want the key and make stack-up", err)
	}
	for _, line := range []string{`msg="waiting for a ZooKeeper session"`, `msg="still waiting for ZooKeeper"`} {
		if !strings.Contains(errOut.String(), line) {
			t.Errorf("the log lacks %s while it waits:\n%s", line, errOut.String())
		}
	}
}

func TestStockFileReadsGoodsAndStock(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, fmt.Sprintf("f%d.csv", len(text)))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readStockFile(write("goodsNo,stock\n1,50\n2, 0\n300,7\n"))
	if err != nil || !slices.Equal(got, []goodsStock{{1, 50}, {2, 0}, {300, 7}}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "goodsNo,stock\n", "1,50\n1,60\n", "1,-1\n", "0,5\n", "1,2,3\n", "1,50\nx,3\n"} {
		if got, err := readStockFile(write(bad)); err == nil {
			t.Errorf("%q read as %v", bad, got)
		}
	}
}
