package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestYourOwnDatabaseAsDocumented runs docs/operations.md's "Your own
// MariaDB and ZooKeeper" as written: its SQL as the administrator of a
// MariaDB of the test's own that checks logins, then its shell block, the
// example hosts and /etc/seckill rewritten to the test's (the namespace
// one of the test's paths, serve on a free port): the shop migrates, sets
// the stock and serves with no privilege but those granted, and sells.
func TestYourOwnDatabaseAsDocumented(t *testing.T) {
	sqlBlock, shBlock := ownDatabaseBlocks(t)
	m := e2e.StartMariaDBWith(t, true, nil)
	root, err := sql.Open("mysql", m.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.Exec("DROP DATABASE seckill"); err != nil { // the helper's: the docs make it
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(sqlBlock, ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			if _, err := root.Exec(stmt); err != nil {
				t.Fatalf("the docs' SQL: %s: %v", stmt, err)
			}
		}
	}
	password := regexp.MustCompile(`IDENTIFIED BY '([^']*)'`).FindStringSubmatch(sqlBlock)
	if password == nil {
		t.Fatal("the docs' SQL makes no user with a password")
	}
	dir, ns, zkServers, port := t.TempDir(), e2e.Path(t), e2e.ZooKeeper(t), freePort(t)
	t.Cleanup(func() { deleteAs(t, zkServers, filepath.Join(dir, "zk-auth"), ns) }) // before Path's own, which is not the shop's identity
	script := strings.NewReplacer(
		"/etc/seckill", dir,
		"db1.example:3306", m.Addr,
		"zk1.example:2181,zk2.example:2181,zk3.example:2181", strings.Join(zkServers, ","),
		"/seckill-prod", ns,
		"bin/shop serve", fmt.Sprintf("exec %s serve --server.addr 127.0.0.1:%d", e2e.ShopBinary(t), port),
		"bin/shop", e2e.ShopBinary(t),
	).Replace(shBlock)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "MYSQL_PASSWORD="+password[1], "SHOP_CONFIG="+e2e.InRoot(t, "config.yaml"), "SHOP_PURCHASE_QUEUETARGET=0s")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // serve, by the PID the test started (exec'd by bash)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if !e2e.WaitUntil(2*time.Minute, func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return e2e.Ask(http.MethodGet, url+"/readyz").Status == http.StatusOK
	}) || e2e.Ask(http.MethodGet, url+"/readyz").Status != http.StatusOK {
		t.Fatalf("the docs' commands did not bring a ready shop up:\n%s\nran:\n%s", out.String(), script)
	}
	if a := e2e.Ask(http.MethodGet, url+"/goods-stock/1"); a.Status != http.StatusOK {
		t.Errorf("a purchase from the shop the docs started: %d %s\n%s", a.Status, a.Code, out.String())
	}
	for _, f := range []string{"mysql-password", "zk-auth"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s as the docs make it: %v %v, want 0600", f, st.Mode(), err)
		}
	}
}

// ownDatabaseBlocks are the ```sql and ```sh blocks of docs/operations.md's
// "Your own MariaDB and ZooKeeper".
func ownDatabaseBlocks(t *testing.T) (sqlBlock, shBlock string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Your own MariaDB and ZooKeeper")
	if i < 0 {
		t.Fatal(`docs/operations.md has no "Your own MariaDB and ZooKeeper"`)
	}
	section := doc[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	block := func(lang string) string {
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindStringSubmatch(section)
		if m == nil {
			t.Fatalf("the section has no %s block", lang)
		}
		return m[1]
	}
	return block("sql"), block("sh")
}

// deleteAs deletes the tree at p as the digest identity in the file
// authFile holds (digest:user:password), if the file was made.
func deleteAs(t *testing.T, servers []string, authFile, p string) {
	raw, err := os.ReadFile(authFile)
	if err != nil {
		return
	}
	if err := e2e.DeleteTreeAs(servers, strings.TrimPrefix(strings.TrimSpace(string(raw)), "digest:"), p); err != nil {
		t.Logf("cleanup of %s: %v", p, err)
	}
}
