package e2e

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

// MariaDB is a MariaDB server of the test's own (its own data directory and
// port), so that the test may kill and restart it: Debian's mariadbd, which
// the stack script installs.
type MariaDB struct {
	dir, Addr, DSN string
	args           []string // the server's own, beyond the helper's
	// grants: the server checks logins (no --skip-grant-tables); the
	// helper's own connections go over the unix socket as root, and dsn
	// is root's over TCP without a password only when it is not set.
	grants bool
	host   *Host // the Network's host it runs in; nil: this namespace, on loopback
	cmd    *exec.Cmd
	done   chan struct{}
}

// StartMariaDB starts a MariaDB of the test's own on a free port, without
// grant tables, stopped at cleanup.
func StartMariaDB(t *testing.T) *MariaDB {
	t.Helper()
	return StartMariaDBWith(t, false, nil)
}

// StartMariaDBWith starts one with args added to the server's command line,
// checking logins if grants.
func StartMariaDBWith(t *testing.T, grants bool, args []string) *MariaDB {
	t.Helper()
	return startMariaDB(t, grants, args, nil)
}

// StartMariaDBIn starts one in host h of a Network, on port 3306 of its
// address.
func StartMariaDBIn(t *testing.T, h *Host) *MariaDB {
	t.Helper()
	return startMariaDB(t, false, nil, h)
}

func startMariaDB(t *testing.T, grants bool, args []string, h *Host) *MariaDB {
	t.Helper()
	Integration(t)
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
	m := &MariaDB{dir: dir, args: args, grants: grants, host: h}
	if h != nil {
		m.Addr = h.Addr(3306)
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m.Addr = ln.Addr().String()
		ln.Close()
	}
	m.Start(t)
	t.Cleanup(func() { m.Kill(t) })
	db, err := sql.Open("mysql", m.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE seckill CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	m.DSN = "root@tcp(" + m.Addr + ")/seckill?parseTime=true"
	return m
}

// AdminDSN is the helper's own way in: root over TCP, or over the unix
// socket when the server checks logins.
func (m *MariaDB) AdminDSN() string {
	if m.grants {
		return "root@unix(" + filepath.Join(m.dir, "sock") + ")/"
	}
	return "root@tcp(" + m.Addr + ")/"
}

func currentUser() string {
	if os.Getuid() == 0 {
		return "root"
	}
	return os.Getenv("USER")
}

// Start starts the server on its data directory and port and waits until it
// answers.
func (m *MariaDB) Start(t *testing.T) {
	t.Helper()
	ip, port, _ := net.SplitHostPort(m.Addr)
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"),
		"--bind-address=" + ip, "--port=" + port, "--socket=" + filepath.Join(m.dir, "sock"),
		"--pid-file=" + filepath.Join(m.dir, "pid"), "--user=" + currentUser(),
		"--skip-name-resolve", "--max-connections=1000", "--innodb-buffer-pool-size=64M"}
	if m.host != nil {
		m.cmd = m.host.Command("mariadbd", args...)
	} else {
		m.cmd = exec.Command("mariadbd", args...)
	}
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
	db, err := sql.Open("mysql", m.AdminDSN())
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
			t.Fatalf("mariadbd on %s did not answer within 60s: %v\n%s", m.Addr, err, out)
		}
	}
}

// Kill ends the server with SIGKILL (a crash: it recovers on start).
func (m *MariaDB) Kill(t *testing.T) {
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
