package e2e

import (
	"bytes"
	"encoding/binary"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOnlyGoZookeepersOwnRaceIsForgiven runs a program built with -race
// that provokes go-zookeeper's race on a reconnect (testdata/zkrace) against
// a ZooKeeper stand-in, and reads the detector's real report: that race
// alone is forgiven, and not when the program raced on its own too.
func TestOnlyGoZookeepersOwnRaceIsForgiven(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zkrace")
	build := exec.Command("go", "build", "-race", "-o", bin, "./testdata/zkrace")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -race ./testdata/zkrace: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args    []string
		forgive bool
	}{
		{nil, true},
		{[]string{"-own"}, false},
	} {
		addr := standIn(t, zkraceWatches)
		var log bytes.Buffer
		cmd := exec.Command(bin, append([]string{"-addr", addr, "-watches", strconv.Itoa(zkraceWatches)}, tc.args...)...)
		cmd.Stderr = &log
		err := cmd.Run()
		if !strings.Contains(log.String(), "sendSetWatches") {
			t.Fatalf("zkrace %v did not show go-zookeeper's race (%v):\n%s", tc.args, err, log.String())
		}
		ok, n := onlyLibraryRaces(err, log.String())
		if ok != tc.forgive {
			t.Errorf("zkrace %v: forgiven %v (%d races), want %v; it said:\n%s", tc.args, ok, n, tc.forgive, log.String())
		}
	}
	if ok, _ := onlyLibraryRaces(&exec.ExitError{}, ""); ok {
		t.Error("an exit without a report was forgiven")
	}
}

// zkraceWatches is how many watches zkrace sets: enough that listing them
// again takes the library longer than its receive loop's first read.
const zkraceWatches = 20000

// zkOpExists is ZooKeeper's opcode of exists.
const zkOpExists int32 = 3

// standIn serves two connections the way a ZooKeeper server would, enough
// for zkrace: the first answers its connect and the watches' requests (a
// stat each, the node exists) and is dropped;
// the second answers its connect and, at once, a reply that carries a zxid,
// so the client's receive loop writes lastZxid while it re-registers its
// watch. It answers later requests until the client leaves.
func standIn(t *testing.T, watches int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reply := func(xid int32, zxid int64, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		b = binary.BigEndian.AppendUint32(b, 0)
		return append(b, body...)
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd.
	connected := binary.BigEndian.AppendUint32(nil, 0)
	connected = binary.BigEndian.AppendUint32(connected, 10000)
	connected = binary.BigEndian.AppendUint64(connected, 1)
	connected = binary.BigEndian.AppendUint32(connected, 16)
	connected = append(connected, make([]byte, 16)...)
	go func() {
		for k := 1; k <= 2; k++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := readZKPacket(conn); err != nil {
				conn.Close()
				return
			}
			writeZKPacket(conn, connected)
			if k == 2 {
				writeZKPacket(conn, reply(1<<20, 9, nil)) // for no request: only its zxid counts
			}
			for answered := 0; k == 2 || answered < watches; {
				req, err := readZKPacket(conn)
				if err != nil {
					break
				}
				xid := int32(binary.BigEndian.Uint32(req[4:8]))
				if k == 1 && int32(binary.BigEndian.Uint32(req[8:12])) == zkOpExists {
					writeZKPacket(conn, reply(xid, 3, make([]byte, 68)))
					answered++
					continue
				}
				writeZKPacket(conn, reply(xid, 9, nil))
			}
			conn.Close()
		}
	}()
	return ln.Addr().String()
}
