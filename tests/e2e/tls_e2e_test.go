package e2e

import (
	"database/sql"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// certificates makes a CA and a server certificate with the stack script,
// as a user would (scripts/stack.sh tls DIR).
func certificates(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if out, err := exec.Command("../../scripts/stack.sh", "tls", dir).CombinedOutput(); err != nil {
		t.Fatalf("scripts/stack.sh tls: %v\n%s", err, out)
	}
	return dir
}

// TestMySQLOverTLS: a MariaDB that refuses plaintext
// (require_secure_transport=ON), and a shop given its CA (mysql.tlsCA)
// sells over TLS, exact; its connections are TLS handshakes the server
// counted; a shop given another CA does not connect.
func TestMySQLOverTLS(t *testing.T) {
	dir := certificates(t)
	m := e2e.StartMariaDBWith(t, true, []string{
		"--ssl-ca=" + filepath.Join(dir, "ca.pem"), "--ssl-cert=" + filepath.Join(dir, "server-cert.pem"),
		"--ssl-key=" + filepath.Join(dir, "server-key.pem"), "--require-secure-transport=ON"})
	root, err := sql.Open("mysql", m.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, q := range []string{"CREATE USER 'shop'@'127.0.0.1' IDENTIFIED BY 'shop-pw'", "GRANT ALL ON seckill.* TO 'shop'@'127.0.0.1'",
		"GRANT PROCESS ON *.* TO 'shop'@'127.0.0.1'"} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m.DSN = "shop:shop-pw@tcp(" + m.Addr + ")/seckill"
	plain, err := sql.Open("mysql", m.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Ping(); err == nil {
		t.Fatal("the server accepts plaintext connections: the test would prove nothing")
	}
	admin, err := sql.Open("mysql", m.DSN+"?tls=skip-verify")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	admin.SetMaxOpenConns(1)
	handshakes := func() int {
		var name string
		var n int
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var cipher string
	if err := admin.QueryRow("SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'").Scan(&cipher); err != nil || cipher == "" {
		t.Fatalf("the test's own connection: cipher %q, %v", cipher, err)
	}
	before := handshakes()

	s := e2e.NewStackOn(t, m.DSN, e2e.ZooKeeper(t), e2e.WithSetting("mysql.tlsCA", filepath.Join(dir, "ca.pem")), e2e.WithStrategy("batch"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "50", "--clear-orders")
	in := s.Serve(t)
	answers, _ := closedLoadOf([]string{in.URL}, 80, 20, func(int) int32 { return 1 })
	ok := sold(t, answers)
	var stock, orders int
	if err := admin.QueryRow("SELECT stock FROM goods_stock WHERE goods_no = 1").Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow("SELECT COUNT(*) FROM order_info WHERE goods_no = 1").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if ok != 50 || stock != 0 || orders != 50 {
		t.Fatalf("%d sold, stock %d, %d orders over TLS; want 50, 0, 50", ok, stock, orders)
	}
	if n := handshakes() - before; n < 3 {
		t.Fatalf("%d TLS handshakes while the shop migrated, set the stock and sold: its connections were not TLS", n)
	}
	t.Logf("the shop's TLS handshakes: %d; cipher of a connection: %s", handshakes()-before, cipher)

	// TLS that checks nobody's certificate is TLS in name: the shop says
	// so, loudly, at start.
	// The database's own paths: one database is served under one set.
	s3 := s.With(t, e2e.WithSetting("mysql.dsn", m.DSN+"?tls=skip-verify"), e2e.WithSetting("mysql.tlsCA", ""))
	if unchecked := s3.Serve(t); !strings.Contains(unchecked.Logs(), "CERTIFICATE IS NOT CHECKED") {
		t.Errorf("a shop whose DSN says tls=skip-verify did not warn at start:\n%s", unchecked.Logs())
	}

	other := certificates(t)
	s2 := e2e.NewStackOn(t, m.DSN, e2e.ZooKeeper(t), e2e.WithSetting("mysql.tlsCA", filepath.Join(other, "ca.pem")))
	out, code := s2.ShopExit(t, "migrate")
	if code == 0 || !strings.Contains(out, "certificate") {
		t.Fatalf("a shop trusting another CA: exit %d\n%s\nwant a refusal naming the certificate", code, out)
	}
}
