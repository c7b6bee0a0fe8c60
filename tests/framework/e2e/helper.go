package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// helperEnv names what the test binary does when a test runs it as a
// helper in a host of a Network (HelperCommand), instead of its tests:
//
//   - "echo ADDR": a TCP echo server on ADDR and a UDP one on the same
//     port; a TCP line "count" is answered with how many datagrams it
//     heard.
//   - "udpping ADDR N": N datagrams to ADDR, 2 ms apart; it prints how
//     many answers came back within a second of the last.
const helperEnv = "SECKILL_E2E_HELPER"

// HelperCommand is the test binary run as a helper in h (see helperEnv).
func HelperCommand(h *Host, what ...string) *exec.Cmd {
	cmd := h.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(what, " "))
	return cmd
}

func runHelper(spec string) int {
	f := strings.Fields(spec)
	var err error
	switch {
	case len(f) == 2 && f[0] == "echo":
		err = echo(f[1])
	case len(f) == 3 && f[0] == "udpping":
		n, _ := strconv.Atoi(f[2])
		err = udpPing(f[1], n)
	default:
		err = fmt.Errorf("unknown helper %q", spec)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func echo(addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	var heard atomic.Int64
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			heard.Add(1)
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				line := sc.Text()
				if line == "count" {
					line = strconv.FormatInt(heard.Load(), 10)
				}
				if _, err := fmt.Fprintln(c, line); err != nil {
					return
				}
			}
		}()
	}
}

func udpPing(addr string, n int) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var answers atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					return
				}
				continue // refused: an ICMP error, no answer
			}
			answers.Add(1)
		}
	}()
	for i := range n {
		_, _ = c.Write([]byte(strconv.Itoa(i)))
		time.Sleep(2 * time.Millisecond)
	}
	<-done
	fmt.Println(answers.Load())
	return nil
}
