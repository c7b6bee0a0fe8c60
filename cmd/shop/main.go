// Command shop is the seckill service: a flash sale whose stock deduction is
// guarded by a ZooKeeper lock (Curator's InterProcessMutex, in Go).
//
//	shop serve                                  serve the HTTP API
//	shop migrate                                apply the schema versions the database lacks
//	shop migrate status                         list the schema versions and which are applied
//	shop migrate wait [--timeout 10m]           wait until MySQL has every schema version
//	shop stock set --goods N --stock M          set a goods' stock (e.g. between load tests)
//	shop probe URL                              exit 0 if URL answers 200 (health checks)
//
// `shop COMMAND --help` lists a command's flags; `shop serve --help` all the
// configuration's.
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

	"github.com/spf13/cobra"

	"github.com/seckill-zk/seckill-zk/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], environment(os.Environ()), os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// environment turns os.Environ's list into a map.
func environment(list []string) map[string]string {
	env := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// run is the whole program: it parses the command line, loads the
// configuration and runs one command until it ends or ctx is canceled.
// Mistakes on the command line are errUsage (exit status 2); --help
// prints the command's help to stdout and returns nil.
func run(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) error {
	root := commands(env, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// commands is the shop's command tree. Each command has only the flags it
// uses; every command reads the whole configuration (file, environment,
// its flags) and refuses a bad or unknown key.
func commands(env map[string]string, stdout, stderr io.Writer) *cobra.Command {
	// load parses the configuration of cmd's flags and makes the logger.
	load := func(cmd *cobra.Command) (Config, *slog.Logger, error) {
		cfg, err := loadConfig(cmd.Flags(), env)
		if err != nil {
			return Config{}, nil, err
		}
		return cfg, newLogger(stderr, cfg.Log.Level), nil
	}
	// with is a command's RunE that loads the configuration and runs f.
	with := func(f func(ctx context.Context, cfg Config, log *slog.Logger) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := load(cmd)
			if err != nil {
				return err
			}
			return f(cmd.Context(), cfg, log)
		}
	}
	root := &cobra.Command{
		Use:   "shop",
		Short: "A flash sale guarded by a ZooKeeper lock (Curator's InterProcessMutex, in Go)",
		Long: `shop sells a goods' stock to a crowd of buyers without overselling: the purchase
(read the stock, write it back minus one, insert an order) runs under a ZooKeeper
lock, fenced by the lock's token.

The configuration comes from config.yaml (or --config / SHOP_CONFIG), overridden by
SHOP_* environment variables (SHOP_LOCK_ENABLED for lock.enabled), overridden by
flags. An unknown key or a bad value stops the command, naming the key.`,
		Example: `  shop migrate && shop stock set --goods 1 --stock 100 --clear-orders
  shop serve
  SHOP_LOCK_ENABLED=false shop serve     # reproduce the seed's overselling`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%w: no command; run shop --help", errUsage)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w%s", errUsage, err, flagHint(err)) })

	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		Long: `serve answers GET /goods-stock/{goodsNo} (the purchase) and the rest of the API until
SIGINT or SIGTERM, then finishes the purchases in flight and releases their locks.
It needs MySQL (mysql.dsn) and, with the lock on, ZooKeeper (zookeeper.servers).`,
		Example: `  shop serve
  shop serve --server.addr 127.0.0.1:8081 --purchase.strategy batch
  shop serve --lock.enabled=false --demo.maxSleep 1s   # oversells under load`,
		Args: noArgs,
		RunE: with(serve),
	}
	configFlags(serveCmd.Flags())

	migrateCmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the schema versions the database lacks",
		Example: `  shop migrate
  shop migrate --mysql.dsn 'seckill:seckill@tcp(127.0.0.1:3306)/seckill'`,
		Args: noArgs,
		RunE: with(migrate),
	}
	configFlags(migrateCmd.Flags(), "mysql.dsn", "log.")
	statusCmd := &cobra.Command{
		Use:     "status",
		Short:   "List the schema versions and which are applied",
		Example: "  shop migrate status",
		Args:    noArgs,
		RunE: with(func(ctx context.Context, cfg Config, _ *slog.Logger) error {
			return migrateStatus(ctx, cfg, stdout)
		}),
	}
	configFlags(statusCmd.Flags(), "mysql.dsn", "log.")
	var waitFor time.Duration
	waitCmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until MySQL answers and has every schema version (a Kubernetes init container's step)",
		Long: `wait exits 0 once MySQL answers and every version of the schema is applied, and 1
after --timeout: an instance started before its migration (a Kubernetes pod whose
migration Job has not run yet) waits in it instead of serving on an old schema.`,
		Example: "  shop migrate wait --timeout 10m",
		Args:    noArgs,
		RunE: with(func(ctx context.Context, cfg Config, log *slog.Logger) error {
			return migrateWait(ctx, cfg, waitFor, log)
		}),
	}
	waitCmd.Flags().DurationVar(&waitFor, "timeout", 10*time.Minute, "how long to wait")
	configFlags(waitCmd.Flags(), "mysql.dsn", "log.")
	migrateCmd.AddCommand(statusCmd, waitCmd)

	stockCmd := &cobra.Command{
		Use:   "stock",
		Short: "Set, list or remove goods: their stock and sale window",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%w: stock takes a subcommand: set, list or remove; run shop stock --help", errUsage)
		},
	}
	stockCmd.AddCommand(stockSetCommand(load), stockListCommand(load, stdout), stockRemoveCommand(load, stdout))

	probeCmd := &cobra.Command{
		Use:     "probe URL",
		Short:   "Exit 0 if URL answers 200 within 3 s (health checks of images without curl)",
		Example: "  shop probe http://127.0.0.1:8080/readyz",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%w: probe takes one URL", errUsage)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return probe(cmd.Context(), args[0], stdout) },
	}
	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the shop's version and the commit it was built from",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, "shop", buildinfo.Read())
			return err
		},
	}
	root.AddCommand(serveCmd, migrateCmd, stockCmd, probeCmd, versionCmd)
	return root
}

// flagHint is "; did you mean --KEY?" for an unknown flag that is a
// setting's name misspelt, as a misspelt key or variable gets.
func flagHint(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	near := nearest(name, func(s setting) string { return s.key })
	if key, found := strings.CutPrefix(near, "; did you mean "); found {
		return "; did you mean --" + key
	}
	return ""
}

// noArgs refuses positional arguments: an unknown subcommand, or a value
// given without its flag.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		hint := ""
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = "; did you mean " + s[0] + "?"
		}
		return fmt.Errorf("%w: unknown command %q for %q%s (run %s --help)", errUsage, args[0], cmd.CommandPath(), hint, cmd.CommandPath())
	}
	return fmt.Errorf("%w: unexpected arguments %s (run %s --help)", errUsage, strings.Join(args, " "), cmd.CommandPath())
}

// probe is a health check for images without curl: GET url, succeed on 200.
func probe(ctx context.Context, url string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", url, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by the config parser
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
