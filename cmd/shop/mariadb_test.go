package main

import (
	"context"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// mariaDB is a MariaDB server of the test's own (its own data directory and
// port), so that the test may kill and restart it: Debian's mariadbd, which
// the stack script installs.
type mariaDB struct {
	dir, addr, dsn string
	args           []string // the server's own, beyond the helper's
	// grants: the server checks logins (no --skip-grant-tables); the
	// helper's own connections go over the unix socket as root, and dsn
	// is root's over TCP without a password only when it is not set.
	grants bool
	cmd    *exec.Cmd
	done   chan struct{}
}

func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	return startMariaDBWith(t, false, nil)
}

// startMariaDBWith starts one with args added to the server's command line,
// checking logins if grants.
func startMariaDBWith(t *testing.T, grants bool, args []string) *mariaDB {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		bin = "/usr/sbin/mariadbd"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no mariadbd (%v): %s", err, "install it with `make stack-up` (scripts/stack.sh installs mariadb-server)")
	}
	dir := t.TempDir()
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user="+currentUser())
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &mariaDB{dir: dir, addr: ln.Addr().String(), args: args, grants: grants}
	ln.Close()
	m.start(t)
	t.Cleanup(func() { m.kill(t) })
	db, err := sql.Open("mysql", m.adminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE seckill CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	m.dsn = "root@tcp(" + m.addr + ")/seckill?parseTime=true"
	return m
}

// adminDSN is the helper's own way in: root over TCP, or over the unix
// socket when the server checks logins.
func (m *mariaDB) adminDSN() string {
	if m.grants {
		return "root@unix(" + filepath.Join(m.dir, "sock") + ")/"
	}
	return "root@tcp(" + m.addr + ")/"
}

func currentUser() string {
	if os.Getuid() == 0 {
		return "root"
	}
	return os.Getenv("USER")
}

// start starts the server on its data directory and port and waits until it
// answers.
func (m *mariaDB) start(t *testing.T) {
	t.Helper()
	_, port, _ := net.SplitHostPort(m.addr)
	m.cmd = exec.Command("mariadbd", "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"),
		"--bind-address=127.0.0.1", "--port="+port, "--socket="+filepath.Join(m.dir, "sock"),
		"--pid-file="+filepath.Join(m.dir, "pid"), "--user="+currentUser(),
		"--skip-name-resolve", "--max-connections=1000", "--innodb-buffer-pool-size=64M")
	if !m.grants {
		m.cmd.Args = append(m.cmd.Args, "--skip-grant-tables")
	}
	m.cmd.Args = append(m.cmd.Args, m.args...)
	log, err := os.OpenFile(filepath.Join(m.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	m.done = make(chan struct{})
	go func() {
		_ = m.cmd.Wait() // killed on purpose, or at cleanup
		log.Close()
		close(m.done)
	}()
	db, err := sql.Open("mysql", m.adminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(m.dir, "server.log"))
			t.Fatalf("mariadbd on %s did not answer within 60s: %v\n%s", m.addr, err, out)
		}
	}
}

// kill ends the server with SIGKILL (a crash: it recovers on start).
func (m *mariaDB) kill(t *testing.T) {
	t.Helper()
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	select {
	case <-m.done:
		return
	default:
	}
	if err := m.cmd.Process.Kill(); err != nil {
		t.Errorf("kill mariadbd: %v", err)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Errorf("mariadbd (pid %d) did not exit within 30s of SIGKILL", m.cmd.Process.Pid)
	}
}
