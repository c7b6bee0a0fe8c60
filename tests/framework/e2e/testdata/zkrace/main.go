// Command zkrace provokes go-zookeeper v1.0.4's own data race (see
// libraryRace in races.go) against a ZooKeeper stand-in that the test
// runs: it sets many watches, and the stand-in drops the connection and
// answers at once on the next one, so the library's receive loop writes
// lastZxid while sendSetWatches reads it. The watches are many so that the
// library is still listing them, before it writes anything to the socket,
// when its receive loop reads that answer: the race detector orders any
// write to a file or socket before any later read of one, which would order
// the two accesses and hide the race. Built with -race it exits 66 with the
// detector's report; with -own it races with itself as well, a race the
// harness must not forgive.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() {
	addr := flag.String("addr", "", "the stand-in's address")
	own := flag.Bool("own", false, "race with itself too")
	n := flag.Int("watches", 20000, "how many watches to set")
	flag.Parse()
	if *own {
		var n int
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { n++ })
		}
		wg.Wait()
	}
	conn, events, err := zk.Connect([]string{*addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	watches := make(chan int)
	var set sync.WaitGroup
	for range 32 {
		set.Go(func() {
			for i := range watches {
				if _, _, _, err := conn.ExistsW(fmt.Sprintf("/zkrace/%d", i)); err != nil {
					log.Fatal(err)
				}
			}
		})
	}
	for i := range *n {
		watches <- i
	}
	close(watches)
	set.Wait()
	// Wait for the second session, then a while for the re-registration.
	sessions := 0
	for deadline := time.After(10 * time.Second); ; {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				sessions++
			}
			if sessions == 2 {
				time.Sleep(200 * time.Millisecond)
				return
			}
		case <-deadline:
			log.Print("zkrace: no reconnect within 10s")
			os.Exit(2)
		}
	}
}
