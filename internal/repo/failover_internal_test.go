package repo

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestSplitAddrs(t *testing.T) {
	for _, tc := range []struct {
		dsn, want string
		addrs     []string
	}{
		{"u:p@tcp(127.0.0.1:3306)/db?parseTime=true", "u:p@tcp(127.0.0.1:3306)/db?parseTime=true", nil},
		{"u:p@tcp(a:1,b:2,c:3)/db", "u:p@tcp(a:1)/db", []string{"a:1", "b:2", "c:3"}},
		{"u:p@tcp( a:1 , b:2 )/db?x=1", "u:p@tcp(a:1)/db?x=1", []string{"a:1", "b:2"}},
		{"u:p/w@tcp(a:1,b:2)/db", "u:p/w@tcp(a:1)/db", []string{"a:1", "b:2"}},
		{"u:p@unix(/run/mysqld.sock)/db", "u:p@unix(/run/mysqld.sock)/db", nil},
		{"/db", "/db", nil},
	} {
		got, addrs := splitAddrs(tc.dsn)
		if got != tc.want || !slices.Equal(addrs, tc.addrs) {
			t.Errorf("splitAddrs(%q) = %q, %v; want %q, %v", tc.dsn, got, addrs, tc.want, tc.addrs)
		}
	}
}

// listeners are three loopback servers that report which of them a dial
// reached.
func listeners(t *testing.T) ([]string, func(conn net.Conn) string) {
	t.Helper()
	var addrs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		addrs = append(addrs, ln.Addr().String())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	return addrs, func(conn net.Conn) string { return conn.RemoteAddr().String() }
}

// TestEveryInstanceFindsTheSameWriter: instances whose DSNs list the nodes
// in different orders send a goods' sales to the same node, and a writer
// that does not answer passes to the next node of the sorted list.
func TestEveryInstanceFindsTheSameWriter(t *testing.T) {
	addrs, reached := listeners(t)
	sorted := slices.Sorted(slices.Values(addrs))
	dial := func(cfg *mysql.Config) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := cfg.DialFunc(ctx, "tcp", "")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return reached(c)
	}
	for _, order := range [][]string{addrs, {addrs[2], addrs[0], addrs[1]}, {addrs[1], addrs[2], addrs[0]}} {
		writers, _ := writerConfigs(mysql.NewConfig(), order)
		for i, w := range writers {
			if got := dial(w); got != sorted[i] {
				t.Errorf("DSN order %v: writer %d dials %s, want %s", order, i, got, sorted[i])
			}
		}
	}
	// A writer whose node is gone fails over to the next in the sorted list.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	list := slices.Sorted(slices.Values([]string{goneAddr, addrs[0]}))
	writers, _ := writerConfigs(mysql.NewConfig(), list)
	i := slices.Index(list, goneAddr)
	if got := dial(writers[i]); got != addrs[0] {
		t.Errorf("the writer of a gone node dials %s, want %s", got, addrs[0])
	}
}

// A DSN the driver refuses is named by its setting, with the form it
// takes: the driver's own words ("default addr for network … unknown")
// name neither.
func TestABadDSNNamesItsSettingAndForm(t *testing.T) {
	_, err := DatabaseOf("seckill:seckill@localhost:3306/seckill")
	if err == nil || !strings.Contains(err.Error(), "mysql.dsn") || !strings.Contains(err.Error(), "tcp(host:port)") {
		t.Fatalf("DatabaseOf of a DSN without tcp(...): %v, want mysql.dsn and the form named", err)
	}
}

// A DSN that reaches a host off this machine without TLS is named; one to
// loopback, or with tls set, is not.
func TestPlaintextRemoteNamesTheHost(t *testing.T) {
	for dsn, want := range map[string]string{
		"u:p@tcp(127.0.0.1:3306)/db":                "",
		"u:p@tcp(localhost:3306)/db":                "",
		"u:p@tcp([::1]:3306)/db":                    "",
		"u:p@tcp(db.example:3306)/db":               "db.example:3306",
		"u:p@tcp(10.0.0.5:3306)/db?tls=false":       "10.0.0.5:3306",
		"u:p@tcp(10.0.0.5:3306)/db?tls=true":        "",
		"u:p@tcp(127.0.0.1:1,10.0.0.6:3306)/db":     "10.0.0.6:3306",
		"u:p@tcp(10.0.0.5:3306)/db?tls=skip-verify": "", // said by UnverifiedTLS
	} {
		if got := PlaintextRemote(dsn); got != want {
			t.Errorf("PlaintextRemote(%q) = %q, want %q", dsn, got, want)
		}
	}
}
