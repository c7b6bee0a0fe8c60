// Command loadtest fires the seed's flash-sale scenario at one or more shop
// instances and measures overselling: it counts successful answers, reads the
// stock and the order rows before and after (and samples them during the
// run), and reports oversold = succeeded - (stock before - stock after).
//
//	go run ./loadtest --url http://127.0.0.1:8081,http://127.0.0.1:8082 --requests 1500
//	go run ./loadtest compare --html report.html off.json on.json
//	go run ./loadtest --help
//
// It stops by itself: after --requests requests or --max-duration.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/crowd"
	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	default:
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		var fail *failure
		if errors.As(err, &fail) {
			os.Exit(fail.code)
		}
		os.Exit(1)
	}
}

// readJWTSecret reads --jwt-secret-file, refusing a secret the shop would
// refuse (auth.MinSecretLen): its every token would be answered 401.
func readJWTSecret(path string) ([]byte, error) {
	secret, err := auth.ReadSecret(path)
	if err != nil {
		return nil, err
	}
	if len(secret) < auth.MinSecretLen {
		return nil, usageError("--jwt-secret-file %s: the secret has %d bytes; the shop refuses an auth.hmacSecretFile of fewer than %d, so it cannot be the shop's",
			path, len(secret), auth.MinSecretLen)
	}
	return secret, nil
}

// authNote says why purchases were answered 401, "" when none was.
func authNote(r *loadgen.Result, signed bool) string {
	n := r.ByStatus["401"]
	if n == 0 {
		return ""
	}
	why := "the shop asks for a bearer token (auth.mode=jwt): give --jwt-secret-file with its auth.hmacSecretFile, " +
		"and --jwt-issuer / --jwt-audience as its auth.issuer / auth.audience"
	if signed {
		why = "the shop refused the tokens: check that --jwt-secret-file holds its auth.hmacSecretFile and that " +
			"--jwt-issuer / --jwt-audience are its auth.issuer / auth.audience"
	}
	return fmt.Sprintf("%s: %d of %d purchases answered 401 unauthenticated: %s", r.Label, n, r.Sent, why)
}

// failure is a verdict that did not hold, or a usage mistake (exit 2); it
// exits with its own code.
type failure struct {
	msg  string
	code int
}

func (f *failure) Error() string { return f.msg }

func usageError(format string, args ...any) error {
	return &failure{fmt.Sprintf(format, args...), 2}
}

// run is the whole program: `loadtest [flags]` runs a load, `loadtest
// compare [flags] RUN.json...` compares saved runs; --help exits 0.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := commands(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

func commands(stdout, stderr io.Writer) *cobra.Command {
	var urls, out, html, goods string
	var jwtSecretFile, jwtIssuer, jwtAudience string
	var asJSON, exact, quiet bool
	o := loadgen.RunOptions{}
	root := &cobra.Command{
		Use:   "loadtest [flags]",
		Short: "Fire the seed's flash sale at shop instances and measure overselling",
		Long: `loadtest sends --requests purchases of --goods, --concurrency at once, round-robin over
the shop instances in --url; it reads the stock and the order rows before, during and after, and
reports oversold = successes - (stock before - stock after + orders expired meanwhile).
It stops by itself after --requests purchases or --max-duration.

With --rate it is an open loop instead, as a sale's buyers are: purchases arrive at --rate a
second for --duration (from 0 over --ramp-up first) whether or not earlier ones were answered,
over --connections keep-alive connections; latency counts from each purchase's due time, and
the report adds offered and sent rates, goodput, refusals, client timeouts and the orders sold
to buyers who had gone. It says so when it could not keep the rate.

  loadtest compare RUN.json...   compare saved runs (--out) side by side, with verdicts`,
		Example: `  loadtest --url http://127.0.0.1:8081,http://127.0.0.1:8082 --requests 1500 --concurrency 1500
  loadtest --requests 3000 --concurrency 200 --ramp 15s --expect-exact --out on.json
  loadtest --rate 2000 --duration 10s --ramp-up 1s --expect-exact
  loadtest compare --html report.html --svg chart.svg --expect oversell,exact off.json on.json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unexpected arguments %s (loadtest compare takes run files; see loadtest --help)", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, u := range strings.Split(urls, ",") {
				if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
					o.Targets = append(o.Targets, u)
				}
			}
			switch {
			case len(o.Targets) == 0:
				return usageError("--url: no target")
			case slices.ContainsFunc(o.Targets, func(u string) bool { return !strings.HasPrefix(u, "http://") || strings.Count(u, "/") > 2 }):
				return usageError("--url %q: base URLs are http://host:port (the load engine speaks plain HTTP/1.1)", urls)
			case o.Buyers < 0:
				return usageError("--buyers must be 0 or more")
			case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
				return usageError("--rate must be 0 (a closed loop) or a positive number of requests a second")
			case o.Rate > 0 && (cmd.Flags().Changed("requests") || cmd.Flags().Changed("concurrency") || cmd.Flags().Changed("ramp")):
				return usageError("--requests, --concurrency and --ramp are the closed loop's; with --rate the schedule (--duration, --ramp-up) decides how many are sent")
			case o.Rate == 0 && (cmd.Flags().Changed("duration") || cmd.Flags().Changed("ramp-up") || cmd.Flags().Changed("connections")):
				return usageError("--duration, --ramp-up and --connections are the open loop's: give --rate too")
			case o.Rate > 0 && (o.Duration <= 0 || o.RampUp < 0 || o.RampUp > o.Duration || o.Connections < 1):
				return usageError("--duration must be positive, --ramp-up between 0 and --duration, --connections at least 1")
			case o.Requests < 1 || o.Concurrency < 1:
				return usageError("--requests and --concurrency must be at least 1")
			case o.Sample <= 0 || o.Timeout <= 0 || o.MaxDuration <= 0 || o.Ramp < 0:
				return usageError("--sample, --timeout and --max-duration must be positive, --ramp not negative")
			}
			set, err := api.ParseGoodsSet(goods)
			if err != nil {
				return usageError("--goods: %v", err)
			}
			o.Goods = set
			if jwtSecretFile != "" {
				secret, err := readJWTSecret(jwtSecretFile)
				if err != nil {
					return err
				}
				now := time.Now()
				o.Token = func(buyer string) (string, error) {
					return auth.MintHS256(secret, buyer, jwtIssuer, jwtAudience, now, time.Hour)
				}
			}
			if _, err := crowd.NewPicker(o.Goods, o.Skew, o.Seed); err != nil {
				return usageError("--%v", err)
			}
			switch o.RequestIDs {
			case "auto":
				o.RequestIDs = "lt-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			case "none":
				o.RequestIDs = ""
			default:
				if !validRequestIDPrefix(o.RequestIDs) {
					return usageError("--request-ids %q: want auto, none, or 1-40 of A-Za-z0-9._:-", o.RequestIDs)
				}
			}
			if o.Rate > 0 {
				o.Requests = loadgen.Profile{Rate: o.Rate, Duration: o.Duration, RampUp: o.RampUp}.Requests()
				if o.Requests < 1 {
					return usageError("--rate %g for --duration %v schedules no request", o.Rate, o.Duration)
				}
				if !cmd.Flags().Changed("timeout") {
					o.Timeout = loadgen.DefaultOpenTimeout // a buyer's patience, not a tool's safety net
				}
				if o.Label == "" {
					o.Label = openLabel(o)
				}
			}
			o.Concurrency = min(o.Concurrency, o.Requests)
			if o.Label == "" {
				o.Label = closedLabel(o)
			}
			if !quiet {
				o.Progress = stderr
				if f, ok := stderr.(*os.File); ok {
					if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
						o.Interactive = true
					}
				}
			}
			r, err := loadgen.Run(cmd.Context(), o)
			if r == nil {
				return err
			}
			if werr := emit(r, asJSON, out, html, stdout); werr != nil {
				return werr
			}
			if note := behindNote(r); note != "" {
				fmt.Fprintln(stderr, note)
			}
			if err != nil {
				return err
			}
			note := authNote(r, jwtSecretFile != "")
			if answered := r.Sent - r.TransportErrors; note != "" && r.ByStatus["401"] == answered {
				return &failure{note, 3} // nothing was measured
			}
			if note != "" {
				fmt.Fprintln(stderr, note)
			}
			if exact {
				if p := r.Problems(); len(p) > 0 {
					if note != "" {
						p = append(p, note)
					}
					return &failure{fmt.Sprintf("%s: not an exact sale: %s", r.Label, strings.Join(p, "; ")), 3}
				}
			}
			return nil
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	fs := root.Flags()
	fs.StringVar(&urls, "url", "http://127.0.0.1:8081,http://127.0.0.1:8082", "shop base URLs, comma separated, used round-robin")
	fs.StringVar(&o.Label, "label", "", "name of the run in tables and charts (default: N buyers, C at once)")
	fs.StringVar(&goods, "goods", "1", "goods to buy: a number, a range (1-200) or a list (1-10,42)")
	fs.StringVar(&o.Skew, "skew", "uniform", "how requests spread over --goods: uniform, or zipf:S (the first goods the hottest, rank k weighted 1/k^S)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the spread over --goods (the same seed, the same requests)")
	fs.StringVar(&o.RequestIDs, "request-ids", "auto", "X-Request-ID prefix: request i sends PREFIX-i (unique per run with auto); none: send no request id")
	fs.IntVar(&o.Requests, "requests", 1500, "purchases to send")
	fs.IntVar(&o.Concurrency, "concurrency", 1500, "buyers at once (the seed's JMeter threads)")
	fs.StringVar(&jwtSecretFile, "jwt-secret-file", "", "a shop with auth.mode jwt: sign an HS256 token per buyer with the secret in this file (every request then has a buyer: buyer-N with --buyers, else its own)")
	fs.StringVar(&jwtIssuer, "jwt-issuer", "", "the tokens' iss (the shop's auth.issuer)")
	fs.StringVar(&jwtAudience, "jwt-audience", "", "the tokens' aud (the shop's auth.audience)")
	fs.IntVar(&o.Buyers, "buyers", 0, "distinct buyer ids (X-User-ID buyer-N, request i is buyer i mod N); more requests than buyers means repeat tries; 0: anonymous")
	fs.DurationVar(&o.Ramp, "ramp", 0, "spread the purchases over this long, purchase i due at RAMP*i/requests, however fast the answers come; once every goods answered sold out the rest go at once (throughput counts from the first request to the last answer)")
	fs.DurationVar(&o.Patience, "patience", time.Minute, "a buyer told to come back (503 queued or busy, 429) comes back after Retry-After, with its place in the shop's waiting room (the cookie), for up to this long from its first request; 0: it takes the first answer")
	fs.BoolVar(&o.ShopHeaders, "retry-after-ms", false, "patient buyers come back after the shop's X-Retry-After-Ms (to the millisecond) with X-Place, instead of after Retry-After (whole seconds) with the cookie as a standard client does")
	fs.DurationVar(&o.Timeout, "timeout", loadgen.DefaultClosedTimeout, "per-request timeout (with --rate: "+loadgen.DefaultOpenTimeout.String()+", a buyer's patience from its due time)")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: purchases arrive at this many a second whatever the answers' pace (latency from each one's due time); 0: a closed loop of --concurrency buyers")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "open loop: how long purchases arrive")
	fs.DurationVar(&o.RampUp, "ramp-up", 0, "open loop: the rate grows from 0 to --rate over this long first (a spike: 1s)")
	fs.IntVar(&o.Connections, "connections", loadgen.DefaultConnections, "open loop: keep-alive connections (a purchase due while all are busy waits, and its wait counts)")
	fs.BoolVar(&o.SendTimeout, "send-timeout", true, "open loop: send X-Request-Timeout-Ms, so that the shop sells nothing to a buyer past its --timeout")
	fs.DurationVar(&o.MaxDuration, "max-duration", 10*time.Minute, "stop the whole run after this long")
	fs.DurationVar(&o.Sample, "sample", 100*time.Millisecond, "how often to read the stock for the chart")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON instead of a table")
	fs.StringVar(&out, "out", "", "also write the JSON result to this file (for loadtest compare)")
	fs.StringVar(&html, "html", "", "write a self-contained HTML report with the chart to this file")
	fs.BoolVar(&exact, "expect-exact", false, "exit 3 unless nothing was oversold, every success has its order row and (with enough requests) no stock is left")
	fs.BoolVar(&quiet, "quiet", false, "no progress bar")
	root.AddCommand(compareCommand(stdout), tokensCommand(stdout))
	return root
}

// closedLabel is a closed loop's default label: how many requests, from
// how many buyers when they repeat, and how many at once or over what ramp.
func closedLabel(o loadgen.RunOptions) string {
	who := fmt.Sprintf("%d buyers", o.Requests)
	if o.Buyers > 0 && o.Buyers < o.Requests {
		who = fmt.Sprintf("%d requests by %d buyers", o.Requests, o.Buyers)
	}
	if o.Ramp > 0 {
		return fmt.Sprintf("%s, %d at a time, started over %v", who, o.Concurrency, o.Ramp)
	}
	return fmt.Sprintf("%s, %d at once", who, o.Concurrency)
}

// tokensCommand prints one bearer token per buyer, buyer-0 to buyer-N-1, a
// line each: for JMeter's plan (and any other tool) against a shop with
// auth.mode jwt.
func tokensCommand(stdout io.Writer) *cobra.Command {
	var secretFile, issuer, audience string
	var buyers int
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:     "tokens --jwt-secret-file FILE --buyers N",
		Short:   "Print an HS256 bearer token per buyer (buyer-0 ... buyer-N-1), one a line",
		Example: "  loadtest tokens --jwt-secret-file out/jwt.secret --buyers 1500 > out/tokens.csv",
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if secretFile == "" || buyers < 1 {
				return usageError("tokens needs --jwt-secret-file and --buyers of 1 or more")
			}
			secret, err := readJWTSecret(secretFile)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(stdout)
			now := time.Now()
			for b := range buyers {
				tok, err := auth.MintHS256(secret, fmt.Sprint("buyer-", b), issuer, audience, now, ttl)
				if err != nil {
					return err
				}
				fmt.Fprintln(w, tok)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&secretFile, "jwt-secret-file", "", "the HS256 secret (the shop's auth.hmacSecretFile)")
	cmd.Flags().StringVar(&issuer, "jwt-issuer", "", "the tokens' iss (the shop's auth.issuer)")
	cmd.Flags().StringVar(&audience, "jwt-audience", "", "the tokens' aud (the shop's auth.audience)")
	cmd.Flags().IntVar(&buyers, "buyers", 0, "how many buyers: buyer-0 to buyer-N-1")
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the tokens are valid")
	return cmd
}

func emit(r *loadgen.Result, asJSON bool, out, html string, stdout io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := writeTable(stdout, r); err != nil {
		return err
	} else if err := writeLegend(stdout); err != nil {
		return err
	}
	if out != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFile(out, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
			return err
		}
	}
	if html != "" {
		return writeFile(html, func(w io.Writer) error { return writeHTML(w, verdicts(r), r) })
	}
	return nil
}

// writeFile writes the file name (its directory made if missing: out/,
// where the docs put the results, in a fresh clone).
func writeFile(name string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// validRequestIDPrefix: the shop takes request ids of 1-64 of A-Za-z0-9._:-;
// a prefix of at most 40 leaves room for "-" and the request's number.
func validRequestIDPrefix(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-", c)) {
			return false
		}
	}
	return true
}
