// Command shop is the seckill service: a flash sale whose stock deduction is
// guarded by a ZooKeeper lock (Curator's InterProcessMutex, in Go).
//
//	shop serve                                  serve the HTTP API
//	shop migrate                                apply the schema versions the database lacks
//	shop migrate status                         list the schema versions and which are applied
//	shop stock set --goods N --stock M          set a goods' stock (e.g. between load tests)
//
// Every command takes the configuration flags; see `shop serve --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/seckill-zk/seckill-zk/internal/repo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, pflag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  shop serve [flags]                          serve the HTTP API
  shop migrate [flags]                        apply the schema versions the database lacks
  shop migrate status [flags]                 list the schema versions and which are applied
  shop stock set --goods N --stock M [flags]  set a goods' stock (--clear-orders deletes its orders,
                                              --reset-fence after ZooKeeper's data was wiped,
                                              --start/--end the sale window)
  shop probe URL                              exit 0 if URL answers 200 (container health checks)
run "shop COMMAND --help" for the flags`

// run is the whole program: it parses the command line, loads the
// configuration and runs one command until it ends or ctx is canceled.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command\n%s", errUsage, usage)
	}
	cmd, args := args[0], args[1:]
	if cmd == "probe" {
		return probe(ctx, args, stdout)
	}
	if cmd == "migrate" && len(args) > 0 && args[0] == "status" {
		cmd, args = "migrate status", args[1:]
	}
	if cmd == "stock" {
		if len(args) == 0 || args[0] != "set" {
			return fmt.Errorf("%w: stock takes the subcommand set\n%s", errUsage, usage)
		}
		cmd, args = "stock set", args[1:]
	}
	fs := pflag.NewFlagSet("shop "+cmd, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	configFlags(fs)
	var goods, stock int32
	var reset repo.StockReset
	var saleStart, saleEnd string
	switch cmd {
	case "serve", "migrate", "migrate status":
	case "stock set":
		fs.Int32Var(&goods, "goods", 1, "goods number")
		fs.Int32Var(&stock, "stock", -1, "new stock (required, ≥ 0)")
		fs.BoolVar(&reset.ClearOrders, "clear-orders", false, "also delete the goods' order rows")
		fs.BoolVar(&reset.ResetFence, "reset-fence", false, "also set the row's fencing token to 0 (after ZooKeeper's data was wiped; never during a sale)")
		fs.StringVar(&saleStart, "start", "", "sale start, RFC 3339 (2026-11-23T10:00:00+08:00) or +DURATION from now (+30s); none: open")
		fs.StringVar(&saleEnd, "end", "", "sale end, RFC 3339 or +DURATION from now; none: open")
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q\n%s", errUsage, cmd, usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %s", errUsage, strings.Join(fs.Args(), " "))
	}
	cfg, err := loadConfig(fs, getenv)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.Log.Level)

	switch cmd {
	case "serve":
		return serve(ctx, cfg, log)
	case "migrate":
		return migrate(ctx, cfg, log)
	case "migrate status":
		return migrateStatus(ctx, cfg, stdout)
	default:
		if stock < 0 || goods <= 0 {
			return fmt.Errorf("%w: stock set needs --goods N (> 0) and --stock M (≥ 0)", errUsage)
		}
		for _, w := range []struct {
			flag, value string
			into        **time.Time
		}{{"--start", saleStart, &reset.SaleStart}, {"--end", saleEnd, &reset.SaleEnd}} {
			t, err := parseSaleTime(w.value, time.Now())
			if err != nil {
				return fmt.Errorf("%w: %s: %w", errUsage, w.flag, err)
			}
			*w.into = t
		}
		return setStock(ctx, cfg, log, goods, stock, reset)
	}
}

// probe is a health check for images without curl: GET url, succeed on 200.
func probe(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: probe takes one URL", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", args[0], resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by the config parser
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// parseSaleTime reads a sale window bound: "" leaves it as it is (nil),
// "none" opens it (the zero time), else RFC 3339 or +DURATION from now.
func parseSaleTime(v string, now time.Time) (*time.Time, error) {
	switch {
	case v == "":
		return nil, nil
	case v == "none":
		return &time.Time{}, nil
	case strings.HasPrefix(v, "+"):
		d, err := time.ParseDuration(v[1:])
		if err != nil {
			return nil, fmt.Errorf("%q is not +DURATION (+30s, +2h): %w", v, err)
		}
		t := now.Add(d)
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%q is not an RFC 3339 time (2026-11-23T10:00:00+08:00), +DURATION or none", v)
	}
	return &t, nil
}
