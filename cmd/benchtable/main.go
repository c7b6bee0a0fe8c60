// Command benchtable reads internal/zklock's benchmark output on stdin,
// echoes it to stderr, and prints the table of ratios `make bench` shows
// (internal/benchtable).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/seckill-zk/seckill-zk/internal/benchtable"
)

func main() {
	runs, err := benchtable.Parse(io.TeeReader(os.Stdin, os.Stderr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runs.Write(os.Stdout)
}
